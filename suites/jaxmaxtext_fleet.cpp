// jaxmaxtext_fleet: the single-node suite run on every node of a cluster at once, each node an
// independent run through the cluster's own transport (local or ssh) and the config's runtime,
// then every node scored against the fleet (lib/cvs/fleet/fleet.hpp) to name the outliers.
//
//   jaxmaxtext_fleet --config SINGLE_CONFIG --cluster FILE [--output DIR] [--max-parallel N]
//                    [--max-z Z] [--min-deviation-pct P] [--min-fleet N] [--baseline CALIBRATION]
//                    [--pairs DISTRIBUTED_CONFIG] [SUITE ARGS...]
//
// Each node's run is the jaxmaxtext_single executable beside this one, on a one-node cluster file
// of that node, with its report in <output>/nodes/<name>/report; SUITE ARGS (e.g.
// --gtest_filter=..., --poll-interval-s 1) pass to every node's run. With --pairs, the healthy nodes
// then run the distributed config two at a time (lib/cvs/fleet/fleet_pairs.hpp: a slow link), each pair
// a jaxmaxtext_distributed run (setup and training only) in <output>/pairs/<round>-<a>+<b>.
// A Slurm cluster (scheduler slurm): one allocation of slurm.nodes for the fleet, each node's and
// pair's run in it. Exit 0: no suspect; 1: a suspect or a slow link; 2: bad input; 3: no allocation.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cvs/base/exit_codes.hpp"
#include "cvs/base/format.hpp"
#include "cvs/base/utc_time.hpp"
#include "cvs/certify/suite_runs.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/config/config.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/config/mesh.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/exec/slurm.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/fleet/fleet_pairs.hpp"
#include "cvs/reporters.hpp"
#include "front_end.hpp"

namespace fs = std::filesystem;

namespace {

struct FleetOptions {
  fs::path config, cluster, output;
  fs::path pairs_config;         // empty: no pairs
  fs::path baseline;             // empty: none
  std::size_t max_parallel = 0;  // 0: every node at once
  cvs::FleetPolicy policy;
  std::vector<std::string> suite_args;
  cvs::report::ReporterOptions reports;  // the fleet run's history record and metrics exports
};

FleetOptions parse_options(CLI::App& app, int argc, char** argv) {
  FleetOptions o;
  std::string config, cluster, output, pairs, baseline;
  app.allow_extras();
  app.add_option("--config", config, "a single-node suite config")->required();
  app.add_option("--cluster", cluster, "the cluster file listing the nodes")->required();
  app.add_option("--output", output,
                 "report folder (default: cvs-results/jaxmaxtext_fleet-<UTC time>; never reused)");
  cvs::fleet::add_policy_options(app, o.policy, o.max_parallel, "node runs at once (default: every node)");
  app.add_option(
      "--baseline", baseline,
      "a calibration of a known-good node (cvs calibrate): each node's steady state scored against it "
      "too, and every node's run gated by it");
  app.add_option("--pairs", pairs,
                 "then two-node runs of this distributed config over the healthy nodes, to find a slow link");
  cvs::fleet::add_report_options(app, o.reports, "fleet run");
  app.parse(argc, argv);
  if (!pairs.empty()) o.pairs_config = fs::absolute(pairs);
  if (!baseline.empty()) o.baseline = fs::absolute(baseline);
  o.config = fs::absolute(cvs::config_argument(config));  // a path, or a shipped config's name
  o.cluster = fs::absolute(cluster);
  o.output = output.empty() ? fs::path("cvs-results") / ("jaxmaxtext_fleet-" + cvs::utc_now("%Y%m%d-%H%M%S"))
                            : fs::path(output);
  o.suite_args = app.remaining();
  o.reports.fleet_files = true;
  cvs::fleet::pass_history_on(o.reports, o.suite_args);
  return o;
}

// Validates the inputs before anything runs (ConfigError: exit 2); a baseline's statistics into the
// policy (the file is each node's run's thresholds too).
cvs::Cluster load_inputs(FleetOptions& o) {
  if (!o.baseline.empty()) {
    o.policy.baseline = cvs::read_fleet_baseline(o.baseline);
  }
  auto cluster = cvs::load_cluster(o.cluster);
  if (cluster.slurm.existing_job)
    throw cvs::ConfigError(o.cluster.string(), "/slurm/job_id", "fleet mode allocates its nodes itself",
                           "remove job_id and nodelist; set slurm.nodes (and extra_args such as --nodelist)");
  const auto cfg = cvs::load_config_for_cluster(o.config, cluster);  // as each node's run will
  if (cfg.mode != cvs::Mode::Single)
    throw cvs::ConfigError(o.config.string(), "/mode", "fleet mode runs a single-node config on every node",
                           "pass a single-node config, e.g. configs/cpu_jaxmaxtext_tiny_single.json");
  cvs::require_meshes_fit(cfg, 1);
  if (!o.pairs_config.empty()) {
    const auto pairs = cvs::load_config_for_cluster(o.pairs_config, cluster);
    if (pairs.mode != cvs::Mode::Distributed)
      throw cvs::ConfigError(o.pairs_config.string(), "/mode",
                             "--pairs runs a distributed config on two nodes at a time",
                             "pass a distributed config, e.g. configs/cpu_jaxmaxtext_tiny_distributed.json");
    cvs::require_meshes_fit(pairs, 2);
  }
  if (fs::exists(o.output))
    throw cvs::ConfigError("(command line)", "",
                           o.output.string() + " exists: a report folder is never reused",
                           "pass a new --output folder");
  return cluster;
}

cvs::certify::NodeRuns node_runs(const FleetOptions& o, const fs::path& root, const fs::path& config) {
  cvs::certify::NodeRuns r;
  r.config = config;
  r.root = root;
  r.thresholds = o.baseline;
  r.args = o.suite_args;
  r.max_parallel = o.max_parallel;
  return r;
}

int run_fleet(const FleetOptions& o, cvs::Cluster cluster) {
  cvs::certify::Allocation allocation(cluster, "fleet");
  if (auto why = allocation.acquire(); !why.empty()) {
    spdlog::error("fleet: {}", why);
    return cvs::kExitInfra;
  }
  const auto nodes =
      cvs::certify::run_nodes(node_runs(o, o.output / "nodes", o.config), cluster, cluster.nodes);
  auto score = cvs::score_fleet(nodes, o.policy);
  std::optional<cvs::PairsResult> pairs;
  if (!o.pairs_config.empty()) {
    const auto healthy = score.healthy();
    if (cvs::g_interrupted.load())
      spdlog::warn("fleet pairs: interrupted (Ctrl-C): no pair runs");
    else if (healthy.size() < 2)
      spdlog::warn("fleet pairs: {} healthy node(s): no pair to run", healthy.size());
    else {
      auto spec = node_runs(o, o.output / "pairs", o.pairs_config);
      spec.thresholds.clear();
      pairs = cvs::certify::run_pairs(spec, cluster, healthy, o.policy.min_deviation);
      cvs::write_pairs_outputs(o.output, *pairs);
      if (cvs::g_interrupted.load()) {  // runs cut short or never started say nothing of a link
        spdlog::warn(
            "fleet pairs: interrupted (Ctrl-C): their findings are not counted (pairs.json has the runs)");
        pairs.reset();
      } else {
        cvs::apply_pair_findings(score, *pairs);
      }
    }
  }
  allocation.release();  // the healthy cluster file asks for a new allocation of the healthy hosts
  const cvs::report::FleetReport fleet{score, nodes, o.policy, pairs ? &*pairs : nullptr, cluster};
  for (const auto& line :
       cvs::report::run_reporters(cvs::report::reporters(o.reports), {.folder = o.output, .fleet = &fleet}))
    std::cerr << "fleet: " << line << "\n";
  if (score.too_small)
    spdlog::warn(
        "fleet: {} passing run(s): too few to score the fleet (--min-fleet {}); only the runs' verdicts "
        "count",
        score.scored, o.policy.min_fleet);
  for (const auto& n : score.nodes)
    std::cout << (n.suspect ? "SUSPECT " : "healthy ") << n.name
              << (n.suspect ? "  " + cvs::fleet_reasons(n) : "") << "\n";
  std::cout << "fleet report: " << (o.output / "fleet.html").string() << "; suspects in "
            << (o.output / "suspect_nodes.txt").string() << "\n";
  if (pairs)
    for (const auto& [a, b] : pairs->slow_links) std::cout << "SLOW LINK " << a << " <-> " << b << "\n";
  return score.suspects().empty() && (!pairs || pairs->slow_links.empty()) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S] [%^%l%$] %v");
  FleetOptions o;
  cvs::Cluster cluster;
  CLI::App app{
      "jaxmaxtext_fleet: the single-node suite on every node at once, each node scored against the fleet. "
      "Arguments it does not know pass to every node's jaxmaxtext_single.",
      "jaxmaxtext_fleet"};
  if (auto rc = cvs::fleet::check_at_edge(app, "jaxmaxtext_fleet", [&] {
        o = parse_options(app, argc, argv);
        cluster = load_inputs(o);
        cvs::certify::check_suite_args("jaxmaxtext_single", o.suite_args);  // a typo runs nothing
      }))
    return *rc;
  cvs::install_interrupt_handler();  // the fleet scores what it has, releases, writes its outputs
  // Caught once, here, after the stack unwound (a Slurm allocation released on every path).
  return cvs::fleet::run_at_edge("jaxmaxtext_fleet", [&] {
    fs::create_directories(o.output);
    return run_fleet(o, cluster);
  });
}
