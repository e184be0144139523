// Suite executables run on the nodes of a cluster, each on a cluster file of its own: fleet mode
// (jaxmaxtext_fleet) and `cvs certify` (lib/cvs/certify) share them. A run is the suite binary
// beside the running one, its report in <dir>/report, its output in <dir>/suite.log. Ctrl-C and
// SIGTERM (install_interrupt_handler: a Jenkins abort, scancel) set g_interrupted, which reaches
// every run (each in a process group of its own): it stops its training and ends ERROR.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cvs/config/cluster.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/fleet/fleet_pairs.hpp"

namespace cvs::certify {

// A folder name for a node (its name with anything but [A-Za-z0-9._-] as '_').
std::string folder_name(const std::string& node);
// Writes `j` to `file` whole (a temporary file renamed over it: a reader never sees half).
void write_json(const std::filesystem::path& file, const nlohmann::ordered_json& j);

// What one batch of runs is.
struct NodeRuns {
  const char* suite = "jaxmaxtext_single";
  std::filesystem::path config;
  std::filesystem::path root;        // each node's run in root/<node folder>
  std::filesystem::path thresholds;  // --thresholds (a calibration), or none
  std::vector<std::string> args;     // to every run (after the suite's own)
  std::size_t max_parallel = 0;      // 0: every node at once
  const char* log_prefix = "fleet";
};

// The arguments fleet mode or certify passes to every run of `suite`, parsed by the suite itself
// (`<suite> --check-options ARGS`) before anything runs: a ConfigError (exit 2) naming what it does
// not know, so a typo never reaches a thousand GPUs.
void check_suite_args(const char* suite, const std::vector<std::string>& args);

// A suite's run on the cluster file in `dir`, its report in dir/report, its run names tagged.
ProcRequest suite_request(const char* suite, const std::filesystem::path& config,
                          const std::filesystem::path& dir, const std::string& tag, const std::string& label);

// Every node of `nodes` on a one-node cluster file of its own, at once (or max_parallel at a time);
// each node's results as fleet mode reads them.
std::vector<FleetNode> run_nodes(const NodeRuns& spec, const Cluster& cluster,
                                 const std::vector<Node>& nodes);

// One run of spec.suite on `nodes` together (one cluster file of them) in spec.root, its run names
// tagged `tag`; its results as fleet mode reads them (named `label`), seconds its wall time.
FleetNode run_together(const NodeRuns& spec, const Cluster& cluster, const std::vector<Node>& nodes,
                       const std::string& tag, const std::string& label);

// Two-node runs of a distributed config over `healthy` (fleet_pairs.hpp), in root/<round>-<a>+<b>,
// setup and training only; `args` but --gtest_filter pass on.
PairsResult run_pairs(const NodeRuns& spec, const Cluster& cluster, const std::vector<std::string>& healthy,
                      double min_deviation);

const Node& node_named(const Cluster& cluster, const std::string& name);

// A Slurm cluster: one allocation for the whole run, every suite run in it (slurm.job_id,
// slurm.nodelist), released by release() or whatever happens.
class Allocation {
 public:
  explicit Allocation(Cluster& cluster, const char* who) : cluster_(cluster), who_(who) {}
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  ~Allocation() { release(); }
  // "" when allocated (or not a Slurm cluster), else why not.
  std::string acquire();
  void release();

 private:
  Cluster& cluster_;
  const char* who_;
};

}  // namespace cvs::certify
