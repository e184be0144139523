// jaxmaxtext_fleet: the single-node suite run on every node of a cluster at once, each node an
// independent run through the cluster's own transport (local or ssh) and the config's runtime,
// then every node scored against the fleet (lib/cvs/fleet.hpp) to name the outliers.
//
//   jaxmaxtext_fleet --config SINGLE_CONFIG --cluster FILE [--output DIR] [--max-parallel N]
//                    [--max-z Z] [--min-deviation-pct P] [--min-fleet N] [SUITE ARGS...]
//
// Each node's run is the jaxmaxtext_single executable beside this one, on a one-node cluster file
// of that node, with its report in <output>/nodes/<name>/report; SUITE ARGS (e.g.
// --gtest_filter=..., --poll-interval-s 1) pass to every node's run. Exit 0: no suspect; 1: a
// suspect; 2: bad input.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cvs/cluster.hpp"
#include "cvs/config.hpp"
#include "cvs/config_error.hpp"
#include "cvs/fleet.hpp"
#include "cvs/fleet_report.hpp"
#include "cvs/process.hpp"
#include "cvs/utc_time.hpp"

namespace fs = std::filesystem;

namespace {

struct FleetOptions {
  fs::path config, cluster, output;
  std::size_t max_parallel = 0;  // 0: every node at once
  cvs::FleetPolicy policy;
  std::vector<std::string> suite_args;
};

FleetOptions parse_options(CLI::App& app, int argc, char** argv) {
  FleetOptions o;
  std::string config, cluster, output;
  double min_dev_pct = o.policy.min_deviation * 100;
  app.allow_extras();
  app.add_option("--config", config, "a single-node suite config")->required();
  app.add_option("--cluster", cluster, "the cluster file listing the nodes")->required();
  app.add_option("--output", output,
                 "report folder (default: cvs-results/jaxmaxtext_fleet-<UTC time>; never reused)");
  app.add_option("--max-parallel", o.max_parallel, "node runs at once (default: every node)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-z", o.policy.max_z, "modified z-score beyond which a node is an outlier (3.5)")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-deviation-pct", min_dev_pct,
                 "and at least this far from the fleet's median, in % (10)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-fleet", o.policy.min_fleet, "passing runs needed to score the fleet (3)")
      ->check(CLI::Range(2, 1 << 20));
  app.parse(argc, argv);
  o.config = fs::absolute(config);
  o.cluster = fs::absolute(cluster);
  o.policy.min_deviation = min_dev_pct / 100;
  o.output = output.empty() ? fs::path("cvs-results") / ("jaxmaxtext_fleet-" + cvs::utc_now("%Y%m%d-%H%M%S"))
                            : fs::path(output);
  o.suite_args = app.remaining();
  return o;
}

// A folder name for a node (its name with anything but [A-Za-z0-9._-] as '_').
std::string folder_name(const std::string& node) {
  std::string s = node;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s;
}

// The cluster file of one node: the fleet's file with only that node, itself the head.
void write_node_cluster(const fs::path& file, const cvs::Cluster& cluster, const cvs::Node& node) {
  std::ifstream in(cluster.file);
  auto raw = nlohmann::ordered_json::parse(in);
  raw["nodes"] = nlohmann::ordered_json::array({cvs::node_to_json(node)});
  raw["head"] = node.name;
  raw["coordinator_address"] = cvs::is_loopback_address(node.host) ? "127.0.0.1" : node.host;
  std::ofstream out(file);
  out << raw.dump(2) << "\n";
}

fs::path single_suite_binary() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  return (ec ? fs::path(".") : self.parent_path()) / "jaxmaxtext_single";
}

// Validates the inputs before anything runs (ConfigError: exit 2).
cvs::Cluster load_inputs(const FleetOptions& o) {
  auto cluster = cvs::load_cluster(o.cluster);
  if (cluster.is_slurm())
    throw cvs::ConfigError(
        o.cluster.string(), "/scheduler", "fleet mode runs on the nodes a cluster file lists",
        "list the nodes (e.g. the allocation's hosts) under \"nodes\" instead of \"scheduler\"");
  const auto cfg =
      cvs::load_config_for_cluster(o.config, cluster, {.user = "", .require_threshold_file = false});
  if (cfg.mode != cvs::Mode::Single)
    throw cvs::ConfigError(o.config.string(), "/mode", "fleet mode runs a single-node config on every node",
                           "pass a single-node config, e.g. configs/cpu_jaxmaxtext_tiny_single.json");
  if (fs::exists(o.output))
    throw cvs::ConfigError("(command line)", "",
                           o.output.string() + " exists: a report folder is never reused",
                           "pass a new --output folder");
  return cluster;
}

std::vector<cvs::FleetNode> run_nodes(const FleetOptions& o, const cvs::Cluster& cluster) {
  std::vector<cvs::ProcRequest> reqs;
  std::vector<fs::path> dirs;
  for (const auto& node : cluster.nodes) {
    const auto dir = o.output / "nodes" / folder_name(node.name);
    fs::create_directories(dir);
    write_node_cluster(dir / "cluster.json", cluster, node);
    cvs::ProcRequest r;
    r.argv = {single_suite_binary().string(),
              "--config",
              o.config.string(),
              "--cluster",
              (dir / "cluster.json").string(),
              "--output",
              (dir / "report").string(),
              "--quiet",
              "--run-tag",
              folder_name(node.name)};
    r.argv.insert(r.argv.end(), o.suite_args.begin(), o.suite_args.end());
    r.timeout = std::chrono::hours(72);  // each run is bounded by its own poll budget
    r.label = node.name;
    reqs.push_back(r);
    dirs.push_back(dir);
  }
  spdlog::info("fleet: {} node(s), {} at once; each node's run in {}/nodes/<node>", reqs.size(),
               o.max_parallel ? std::min(o.max_parallel, reqs.size()) : reqs.size(), o.output.string());
  const auto results = cvs::run_all(reqs, o.max_parallel ? o.max_parallel : reqs.size());
  std::vector<cvs::FleetNode> nodes;
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::ofstream(dirs[i] / "suite.log") << results[i].out << results[i].err;
    auto n = cvs::read_fleet_node(cluster.nodes[i].name, dirs[i] / "report" / "results.json");
    if (n.status.empty()) n.failure = results[i].describe() + " (" + n.failure + ")";
    spdlog::info("fleet: {} ended {} in {:.0f} s", n.name, n.status.empty() ? "without results" : n.status,
                 results[i].seconds);
    nodes.push_back(std::move(n));
  }
  return nodes;
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
  try {
    o = parse_options(app, argc, argv);
    cluster = load_inputs(o);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "jaxmaxtext_fleet: " << e.what() << "\n" << app.help();
    return 2;
  } catch (const cvs::ConfigError& e) {
    for (const auto& i : e.issues()) std::cerr << "error: " << i.to_string() << "\n";
    return 2;
  }
  fs::create_directories(o.output);
  const auto nodes = run_nodes(o, cluster);
  const auto score = cvs::score_fleet(nodes, o.policy);
  cvs::write_fleet_outputs(o.output, score, cluster, o.policy);
  std::ofstream(o.output / "junit.xml") << cvs::report::render_fleet_junit(score, "jaxmaxtext_fleet");
  std::ofstream(o.output / "fleet.html")
      << cvs::report::render_fleet_html(score, nodes, o.policy, "jaxmaxtext_fleet");
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
  return score.suspects().empty() ? 0 : 1;
}
