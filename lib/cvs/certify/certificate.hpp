// A cluster certification (`cvs certify`): tiers, each run only on the nodes the tier before left
// healthy, each tier's outcome written before the next starts, and the certificate they make.
//
//  preflight  every node's setup stage at once (container, JAX probe, vendor-tool probe, RDMA with
//             a distributed config): a node whose setup did not pass, whose probe said nothing,
//             or whose facts differ from the majority's is excluded before it costs a training run
//  nodes      fleet mode's per-node training runs and scoring; a node suspect on speed alone runs
//             once more and stays excluded only if slow again
//  links      fleet mode's two-node runs over the healthy nodes (with a distributed config)
//  scale      the distributed config on 1, 2, 4, ... and all healthy nodes: each rung's scaling
//             efficiency against the 1-node rung of the same session, with its interval, against
//             a bound per doubling; the all-node run's own gates decide the last rung
//
// A tier that did not run (budget, Ctrl-C, too few nodes) is said so, never PASS; the certificate
// is schema-versioned and is also the state `--resume` continues from.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cvs/catalog/outcome.hpp"
#include "cvs/logs/run_timeline.hpp"

namespace cvs {

enum class TierKind { Preflight, Nodes, Links, Scale };
const char* to_string(TierKind t);

enum class TierState { Pending, Decided, NotRun };
const char* to_string(TierState s);

struct Exclusion {
  std::string node, tier, evidence;
};

// One rung of the scaling ladder.
struct Rung {
  std::size_t nodes = 0;
  std::optional<Outcome> status;  // the run's own verdict; none when it left no results
  std::string failure;
  std::string sweep;
  double tok_s_per_gpu = 0;  // steady-state estimate
  std::optional<std::pair<double, double>> interval;
  // Against the 1-node rung: 100 x this rung's tokens/s/GPU / rung 1's, and its interval from the
  // two runs' intervals (lo = lo_n / hi_1, hi = hi_n / lo_1).
  std::optional<double> efficiency_pct, efficiency_lo_pct, efficiency_hi_pct;
  double bound_pct = 0;  // 100 x per_doubling ^ log2(nodes)
  // PASS: the whole interval clears the bound; FAIL: the whole interval is below it; INCONCLUSIVE
  // otherwise, and whenever either run has no interval (too few steady steps).
  Outcome verdict = Outcome::Inconclusive;
  double seconds = 0;
  long long steps = 0;
  PhaseTotals phases;  // its runs' (the head's): node-seconds of one node
};

struct TierRecord {
  TierKind kind = TierKind::Preflight;
  TierState state = TierState::Pending;
  std::optional<Outcome> outcome;  // Decided: PASS (no node excluded, every gate met), FAIL, ERROR
  std::string summary;             // one line
  std::string why_not_run;
  std::vector<std::string> nodes_in;  // the nodes it started with
  std::vector<Exclusion> excluded;
  std::vector<std::string> reruns;  // nodes run once more (speed only)
  // What its runs were: the stages each node ran ("test_setup, sweep/test_training_run, ...") and
  // any run of its own (the checkpoint save and resume, once, on one node).
  std::string ran;
  std::vector<Rung> rungs;  // scale
  std::string started_at, ended_at;
  double seconds = 0;
  double node_minutes = 0;   // node-seconds of its runs / 60
  long long node_steps = 0;  // training steps of its runs, times their nodes
  std::string dir;           // where its runs are
  // Nodes tier: the wall seconds of its one batch of runs (every node at once), the estimate of
  // one training run that --budget-minutes holds the later tiers against, kept for --resume.
  double run_seconds = 0;
  double budget_minutes = 0;  // the --budget-minutes of the command that ran it (0: none)
  // What it could have seen, at 95 % power from the figures it measured: the nodes tier the least
  // slowdown of one node its scoring flags (fleet/fleet.hpp: detection_power), over its sweeps'
  // tokens/s; the links tier the least rise of one pair's step time (fleet_pairs.hpp:
  // link_detection_power, figure "pair step_time_p50_ms").
  std::optional<double> detection_power_pct;
  std::string detection_power_figure;  // the sweep and metric it was best on
  // Where its node-minutes went: its runs' phases from their logs (logs/run_timeline.hpp), times
  // their nodes; other is the runs' time the logs leave out.
  PhaseTotals phases;
};

struct CertificateInputs {
  std::string cluster_file, cluster_sha256;
  std::vector<std::string> hosts;  // node names, in the cluster file's order
  std::string config_file, config_sha256;
  std::string distributed_config_file, distributed_config_sha256;
  std::string baseline_file, baseline_sha256;
  nlohmann::ordered_json baseline_provenance;  // the calibration's
  std::size_t min_nodes = 0;                   // 0: every node
  double budget_minutes = 0;                   // 0: none
  double scaling_per_doubling_pct = 90;
  double max_z = 3.5, min_deviation = 0.10;
  std::size_t min_fleet = 3;
  bool drain = false;
  bool early_stop = true;          // every speed gate with on_inconclusive extend (--fixed-steps: fail)
  double detect_slowdown_pct = 0;  // the nodes tier's target power (--detect-slowdown-pct); 0: none
  std::vector<std::string> suite_args;
  // The results store the certification and every one of its runs record in (resolved, its
  // password redacted): a resumed part records where the start did.
  std::string history;
};

enum class Verdict { Certified, NotCertified, Incomplete, Error };
const char* to_string(Verdict v);

struct Certificate {
  static constexpr int kSchemaVersion = 1;
  CertificateInputs inputs;
  std::string tool_version, git_commit;
  std::string started_at, ended_at;
  std::vector<TierRecord> tiers;
  std::vector<std::string> certified;  // the nodes every tier that ran left healthy
  std::vector<Exclusion> excluded;
  std::vector<std::string> drain_commands;  // run (--drain) or none
  Verdict verdict = Verdict::Incomplete;
  std::string verdict_reason;

  TierRecord* tier(TierKind k);
  const TierRecord* tier(TierKind k) const;
  // The nodes no decided tier excluded, in the cluster file's order.
  std::vector<std::string> healthy() const;
};

// The ladder's rungs for n healthy nodes: 1, 2, 4, ..., and n itself last.
std::vector<std::size_t> ladder(std::size_t n);
// 100 x per_doubling ^ log2(nodes), per_doubling a fraction.
double scaling_bound_pct(std::size_t nodes, double per_doubling);
// Each rung's efficiency against rungs[0] (the 1-node rung), its interval and verdict.
void score_ladder(std::vector<Rung>& rungs, double per_doubling);

// One training run's seconds as a certification measured it (its nodes tier's batch; 0 before
// that tier ran): what a tier's runs_needed (lib/cvs/certify/tiers.hpp) is multiplied by.
double run_estimate_s(const Certificate& c);
// Before a tier that needs need_minutes: "" when it fits what is left of budget_minutes after
// elapsed_min (0: no budget), else why it does not start.
std::string over_budget(double need_minutes, double budget_minutes, double elapsed_min);

// The verdict from the tiers: Error when a tier errored, Incomplete when one did not run, else
// Certified when every node is healthy or at least min_nodes are, NotCertified otherwise.
void decide(Certificate& c);
// 0 certified, 1 not (or incomplete), 3 an infrastructure error.
int exit_code(const Certificate& c);

nlohmann::ordered_json to_json(const Certificate& c);
// The one reader of certificate.json (`file` names it in errors). Throws ConfigError with the file,
// the JSON pointer of what is missing or wrong, and a fix.
Certificate certificate_from_json(const nlohmann::ordered_json& j, const std::string& file);
// The file read and parsed (ConfigError when it cannot be read or is not JSON), then as above:
// what --resume, cvs report and the history read.
Certificate read_certificate(const std::filesystem::path& file);

}  // namespace cvs
