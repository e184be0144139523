// Every output is a reporter behind one interface, built from typed results: a session's
// results.json, report.html and JUnit file (junit.hpp, from the typed stages); a fleet run's files
// (fleet.json, suspect_nodes.txt, healthy_nodes.txt, slurm_exclude.txt, healthy_cluster.json), its JUnit file
// and fleet.html; a certification's certificate.html, JUnit, slurm_exclude.txt and healthy_cluster.json; and
// for each of these (and a calibration) the OpenMetrics textfile, the Pushgateway push, the Markdown summary
// and the results history. The suites, `cvs report`, fleet mode, certify and calibrate loop over the same
// list (reporters()); a new format is one reporter (a class, or output(name, essential, write)) and one line
// in reporters() or output_options().
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvs/certify/certificate.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/fleet/fleet_pairs.hpp"
#include "cvs/history/store.hpp"
#include "cvs/results/results_file.hpp"

namespace CLI {
class App;
}

namespace cvs::report {

// A fleet run: its score, each node's run, the policy, the pair runs (--pairs) and the cluster.
struct FleetReport {
  const FleetScore& score;
  const std::vector<FleetNode>& nodes;
  const FleetPolicy& policy;
  const PairsResult* pairs;
  const Cluster& cluster;
};

// A certification (cvs certify): its certificate and the cluster file it certified.
struct CertificationReport {
  const Certificate& certificate;
  const Cluster& cluster;
};

// What a reporter writes from: a session (results), a fleet run or a certification; or only an
// entry (a calibration: the history and the metrics exports).
struct ReportContext {
  std::filesystem::path folder;
  const Results* results = nullptr;              // a suite session
  const history::SessionEntry* entry = nullptr;  // given: what the history and metrics exports take
  const FleetReport* fleet = nullptr;            // a fleet run (its entry is read from its files)
  const CertificationReport* certification = nullptr;
  // The entry once built (a fleet's reads every node's results.json): the history, OpenMetrics and
  // Pushgateway reporters share it.
  mutable std::optional<history::SessionEntry> built_entry{};
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string name() const = 0;
  // Writes its output; returns where it went, for the session's closing lines ("" for nothing).
  // An essential reporter's failure is the session's; any other's is said in one line and never
  // changes a verdict or an exit code.
  virtual std::string write(const ReportContext& ctx) = 0;
  virtual bool essential() const { return false; }
};

struct ReporterOptions {
  bool session_files = true;   // results.json and report.html (a session; not cvs report's re-render)
  bool fleet_files = false;    // a fleet run's files, JUnit and fleet.html
  bool certify_files = false;  // a certification's page, JUnit, exclude and healthy cluster files
  std::string html;            // report.html elsewhere ("": <folder>/report.html)
  std::string junit;    // the session's JUnit file, written from its typed stages (junit.hpp; "": none)
  std::string history;  // --history SPEC ("none": off; "": $CVS_HISTORY or the default store)
  bool record_history = true;
  // The outputs asked for by an option, by its flag ("--openmetrics" -> FILE): output_options().
  std::map<std::string, std::string> outputs;
};

// An output a user asks for with `--flag VALUE` (--openmetrics FILE, --pushgateway URL,
// --summary-md FILE). Every front end (the suites, fleet mode, cvs report) offers every row through
// add_output_options, and reporters() builds the ones given: a new output is its reporter's file
// and one row of this table.
struct OutputOption {
  const char* flag;
  const char* help;
  std::unique_ptr<Reporter> (*make)(const std::string& value);
};
const std::vector<OutputOption>& output_options();
void add_output_options(CLI::App& app, ReporterOptions& o);

std::vector<std::unique_ptr<Reporter>> reporters(const ReporterOptions& o);

// Runs every reporter; prints "cvs: <name> <where>" for each; an essential reporter's exception
// propagates, any other's is one warning line. Returns the lines.
std::vector<std::string> run_reporters(const std::vector<std::unique_ptr<Reporter>>& list,
                                       const ReportContext& ctx);

}  // namespace cvs::report
