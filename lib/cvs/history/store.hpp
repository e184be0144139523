// The results history: every suite session, fleet run, certification and calibration, recorded when it ends
// (or ingested from its folder later), in one schema on either engine (db.hpp). What a cluster
// team asks of months of certifications: a node's ledger, the nodes that keep failing (lemons),
// a metric's trend with the provenance changes that moved it (trend.hpp).
//
// Schema (version kSchemaVersion; cvs_schema holds it; a newer store is refused with its version,
// an older one migrated):
//   sessions   (id PK, kind, suite, started_at, finished_at, status, config_file, config_sha256,
//               cluster, nodes, source)
//   provenance (session_id, field, value)                     PK (session_id, field)
//   metrics    (session_id, sweep, metric, value, estimate, lo, hi, outcome)
//                                                             PK (session_id, sweep, metric)
//   nodes      (session_id, node, outcome, suspect, evidence, figure)
//                                                             PK (session_id, node)
// A session is written in one transaction; the same session again (its id: a hash of kind,
// suite, start time, config sha256 and cluster) is one row.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvs/catalog/outcome.hpp"
#include "cvs/history/db.hpp"

namespace cvs {
struct Results;  // results_file.hpp
}  // namespace cvs

namespace cvs::history {

inline constexpr int kSchemaVersion = 1;

// An outcome in the history: a gate's or a node's run; none when there is none (a metric no gate
// decided, a node that left no results). Text only at the SQL and output edges: outcome_text
// ("PASS" ... or "NO RESULTS") and outcome_of_text.
using RunOutcome = std::optional<Outcome>;
std::string outcome_text(const RunOutcome& o);
RunOutcome outcome_of_text(const std::string& s);

struct MetricEntry {
  std::string sweep, metric;  // metric without "training."
  std::optional<double> value, estimate, lo, hi;
  RunOutcome outcome;
};

struct NodeEntry {
  std::string node;
  RunOutcome outcome;
  bool suspect = false;
  std::string evidence;          // why, when a suspect
  std::optional<double> figure;  // its tokens/s (fleet runs: per node)
};

struct SessionEntry {
  std::string id, kind, suite, started_at, finished_at;
  // What tells two records of one run apart (part of the id when set): a resumed certification
  // keeps its start, and its end is its revision. "" for a record that is never continued.
  std::string revision;
  Outcome status = Outcome::Pass;
  std::string config_file, config_sha256, cluster, source;
  int nodes = 0;
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<MetricEntry> metrics;
  std::vector<NodeEntry> node_entries;
};

// A suite session's entry (kind "suite"), from its typed results.
SessionEntry entry_of_session(const Results& r, const std::string& source);
// A fleet run's entry (kind "fleet"), from its output folder (fleet.json and each node's results).
SessionEntry entry_of_fleet(const std::filesystem::path& folder);
// A calibration's entry (kind "calibration"), from the file cvs calibrate wrote and its repeats.
SessionEntry entry_of_calibration(const std::filesystem::path& file, const std::vector<Results>& repeats);
// A certification's entry is the certification's own (certify/certificate_entry.hpp).
// Whatever a folder holds: a fleet run (fleet.json), a session (results.json), or a calibration
// file; StoreError when it is none of these (certify::entry_of_folder reads a certification first).
SessionEntry entry_of_folder(const std::filesystem::path& path);
// An entry's id: the same session is the same kind, suite, start, config, cluster file, nodes
// and revision.
std::string session_id(const SessionEntry& e);
// A figure as the store keeps it: nullopt (NULL) for NaN or infinity.
std::optional<double> stored_figure(double v);

struct SessionRow {
  std::string id, kind, suite, started_at;
  RunOutcome status;
  std::string config_file, config_sha256, cluster;
  int nodes = 0;
};

struct LedgerRow {
  std::string session_id, started_at, kind, config_file;
  RunOutcome outcome;
  bool suspect = false;
  std::string evidence;
  std::optional<double> figure;
};

struct Lemon {
  std::string node;
  int suspect_in = 0, of_last = 0;
  std::string evidence;             // the latest
  std::optional<double> trend_pct;  // its figure's change across its sessions, when it falls
};

struct TrendPoint {
  std::string session_id, started_at, sweep;
  double estimate = 0;
  std::optional<double> lo, hi;
  std::vector<std::pair<std::string, std::string>> provenance;
};

class Store {
 public:
  // spec: "none" (nullptr), a path (SQLite), sqlite:PATH, or postgresql://... / postgres://...;
  // empty: $CVS_HISTORY, else the default SQLite file (default_store_path).
  static std::unique_ptr<Store> open(const std::string& spec);
  explicit Store(std::unique_ptr<Db> db);

  // Writes the session in one transaction; false when it was there already.
  bool record(const SessionEntry& e);
  std::vector<SessionRow> sessions(const std::string& config, const std::string& cluster,
                                   const std::string& since) const;
  std::vector<LedgerRow> ledger(const std::string& node) const;
  // Nodes suspect in at least k of their last n sessions, or whose figure fell more than
  // `fall_pct` from their first to their last session.
  std::vector<Lemon> lemons(int k, int n, double fall_pct) const;
  // A metric's estimates per session of a config, oldest first, with each session's provenance.
  std::vector<TrendPoint> trend(const std::string& config, const std::string& metric,
                                const std::string& sweep) const;
  std::vector<SessionEntry> latest_sessions() const;  // the newest session per config and cluster
  // The tiers' times of the newest certification of the config of this sha256 with `hosts` hosts
  // (a CERTIFIED one with every host certified first, else any), by tier: seconds, node_minutes,
  // nodes_in and the phases' node-minutes (certify::entry_of_certificate); nullopt when there is none.
  struct CertificationTimes {
    std::string id, started_at, verdict;
    int hosts = 0;
    std::map<std::string, std::map<std::string, double>> tiers;  // "nodes" -> "seconds" -> 41.2
  };
  std::optional<CertificationTimes> certification_times(const std::string& config_sha256, int hosts) const;
  Db& db() { return *db_; }
  std::string where() const { return db_->engine() + " " + db_->where(); }

 private:
  void migrate();
  std::unique_ptr<Db> db_;
};

// $XDG_STATE_HOME/cvs-maxtext/history.sqlite, else ~/.local/state/cvs-maxtext/history.sqlite (beside
// the calibrations).
std::filesystem::path default_store_path();

// The store a spec names as Store::open reads it: "none"; the given spec, else $CVS_HISTORY, else
// the default SQLite file; a SQLite path made absolute (a resumed certification may start in
// another folder).
std::string resolve_store_spec(const std::string& given);
// A spec fit to be written down: a PostgreSQL URL's password replaced by *** (user:***@host),
// a password=... key of a libpq string by password=***; anything else as it is.
std::string redacted_store_spec(const std::string& spec);

}  // namespace cvs::history
