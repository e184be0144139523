// cvs certify's inputs (lib/cvs/certify/certificate.hpp says what each tier decides): the options,
// every check before any node runs, and the configs every run of the certification reads.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cvs/certify/certificate.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/fleet/fleet.hpp"

namespace cvs::certify {

struct Options {
  std::filesystem::path cluster, config, distributed_config, baseline, output, resume;
  double budget_minutes = 0;
  std::size_t min_nodes = 0;
  bool drain = false;
  std::size_t max_parallel = 0;
  double per_doubling_pct = 90;
  bool fixed_steps = false;  // benchmarks: on_inconclusive "fail" (every run its configured steps)
  bool plan = false;         // --plan: every check, then the plan (certify/plan.hpp); nothing written
  // --detect-slowdown-pct: the slowdown of one node the nodes tier must be able to see; each of its
  // runs steps until its tokens/s interval is narrow enough (fleet.hpp: interval_half_width_for).
  // 0: none (each run stops once its speed gates are decisive).
  double detect_slowdown_pct = 0;
  FleetPolicy policy;
  std::vector<std::string> suite_args;
  // --history as given ("" : $CVS_HISTORY or the default store); load_inputs resolves it, and on
  // --resume it is the certificate's store (another one is refused).
  std::string history;
  std::string tool_version = "unknown",
              git_commit = "unknown";  // the front end's build, into the certificate
};

// The user passed a --gtest_filter to the runs (their stages, not the tiers' own).
bool user_filter(const Options& o);

struct Inputs {
  Cluster cluster;
  std::filesystem::path single_config, distributed_config;  // the copies in <output>/inputs
  std::string first_sweep;                                  // the distributed config's first run
  long long distributed_steps = 0;                          // its configured steps
  double confidence = 0.95;        // the single config's statistics.confidence: its runs' intervals
  double stop_half_width_pct = 0;  // the nodes tier's runs step until tokens/s is this precise (0: none)
  bool checkpoint_resume = false;  // the single config's checkpoint_resume.enabled: run once, on one node
  std::vector<long long> single_steps;  // the single config's configured steps, one per run
  std::vector<long long> single_caps;   // and the most each may step (statistics.extend_max_steps)
  long long checkpoint_steps = 0;       // its checkpoint save and resume's steps (both processes)
  int gpus_per_node = 1;
  Certificate certificate;  // new, or the one --resume continues
};

// Every check before any node runs (ConfigError, exit 2): the cluster file, the configs and their
// modes, a calibration that fits the single config, --drain without Slurm, an output folder that
// exists (new) or one written for another cluster or config (--resume). Then the output folder and
// its inputs/ (the configs with on_inconclusive extend) are written (not with --plan: the configs
// are read where they are).
Inputs load_inputs(Options& o);

// The distributed config with `steps` steps for its first sweep, a multiple of distributed_steps
// (a scale rung run again for an interval; every step count scaled alike), written once into
// <output>/inputs.
std::filesystem::path distributed_config_with_steps(const Options& o, const Inputs& in, long long steps);

}  // namespace cvs::certify
