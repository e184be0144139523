#include "cvs/certify/suite_runs.hpp"
#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/catalog/stage_names.hpp"

#include <spdlog/spdlog.h>

#include <fstream>

#include "cvs/base/format.hpp"
#include "cvs/base/text.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/slurm.hpp"

namespace fs = std::filesystem;

namespace cvs::certify {

std::string folder_name(const std::string& node) {
  std::string s = node;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s;
}

void write_json(const fs::path& file, const nlohmann::ordered_json& j) {
  write_file_whole(file, j.dump(2) + "\n");
}

namespace {

// A suite executable beside this one (an install's libexec/cvs-maxtext, the build tree's suites/).
fs::path suite_binary(const char* name) {
  return self_dir() / name;
}

// The run's output kept beside its report; its results.json read (status none: it left none).
FleetNode read_run(const std::string& name, const ProcResult& result, const fs::path& dir) {
  std::ofstream(dir / "suite.log") << result.out << result.err;
  auto n = read_fleet_node(name, dir / "report" / "results.json");
  if (!n.status) n.failure = result.describe() + " (" + n.failure + ")";
  n.seconds = result.seconds;
  n.phases.set_other(n.seconds);
  return n;
}

}  // namespace

void check_suite_args(const char* suite, const std::vector<std::string>& args) {
  ProcRequest r;
  r.argv = {suite_binary(suite).string(), "--check-options"};
  r.argv.insert(r.argv.end(), args.begin(), args.end());
  r.timeout = std::chrono::seconds(60);
  r.label = suite;
  const auto res = run_all({r}, 1).front();
  if (res.exit_code == 0) return;
  std::string why = res.err.empty() ? res.describe() : res.err.substr(0, res.err.find('\n'));
  throw ConfigError(
      "(command line)", "", why,
      "fix or remove it: besides its own options, only the suite's options and gtest's --gtest_* "
      "flags pass on to the runs");
}

ProcRequest suite_request(const char* suite, const fs::path& config, const fs::path& dir,
                          const std::string& tag, const std::string& label) {
  ProcRequest r;
  r.argv = {suite_binary(suite).string(),
            "--config",
            config.string(),
            "--cluster",
            (dir / "cluster.json").string(),
            "--output",
            (dir / "report").string(),
            "--quiet",
            "--run-tag",
            tag};
  r.timeout = std::chrono::hours(72);
  r.label = label;
  return r;
}

namespace {

// spec.suite on `nodes` (their cluster file written into `dir`), with spec's --thresholds and args.
ProcRequest request_for(const NodeRuns& spec, const Cluster& cluster, const std::vector<Node>& nodes,
                        const fs::path& dir, const std::string& tag, const std::string& label) {
  fs::create_directories(dir);
  write_json(dir / "cluster.json", cluster_file_with(cluster, nodes));
  auto r = suite_request(spec.suite, spec.config, dir, tag, label);
  if (!spec.thresholds.empty()) r.argv.insert(r.argv.end(), {"--thresholds", spec.thresholds.string()});
  r.argv.insert(r.argv.end(), spec.args.begin(), spec.args.end());
  return r;
}

}  // namespace

std::vector<FleetNode> run_nodes(const NodeRuns& spec, const Cluster& cluster,
                                 const std::vector<Node>& nodes) {
  std::vector<ProcRequest> reqs;
  std::vector<fs::path> dirs;
  for (const auto& node : nodes) {
    dirs.push_back(spec.root / folder_name(node.name));
    reqs.push_back(request_for(spec, cluster, {node}, dirs.back(), folder_name(node.name), node.name));
  }
  const std::size_t at_once = spec.max_parallel ? std::min(spec.max_parallel, reqs.size()) : reqs.size();
  spdlog::info("{}: {} node(s), {} at once; each node's run in {}/<node>", spec.log_prefix, reqs.size(),
               at_once, spec.root.string());
  const auto results = run_all(reqs, std::max<std::size_t>(1, at_once), &g_interrupted);
  std::vector<FleetNode> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto n = read_run(nodes[i].name, results[i], dirs[i]);
    spdlog::info("{}: {} ended {} in {:.0f} s", spec.log_prefix, n.name,
                 to_string(n.status, "without results"), results[i].seconds);
    out.push_back(std::move(n));
  }
  return out;
}

FleetNode run_together(const NodeRuns& spec, const Cluster& cluster, const std::vector<Node>& nodes,
                       const std::string& tag, const std::string& label) {
  const auto req = request_for(spec, cluster, nodes, spec.root, tag, label);
  return read_run(label, run_all({req}, 1, &g_interrupted).front(), spec.root);
}

const Node& node_named(const Cluster& cluster, const std::string& name) {
  for (const auto& n : cluster.nodes)
    if (n.name == name) return n;
  throw std::logic_error("no node " + name);
}

namespace {

// A pair's run: the distributed suite on a two-node cluster file, setup and training only (the
// gates are the per-node runs'). Pairs of one batch never share a node, but local nodes share a
// host: each pair but the first gets its own JAX coordinator port.
ProcRequest pair_request(const NodeRuns& spec, const Cluster& cluster, const PairRun& p, std::size_t index,
                         const fs::path& dir) {
  fs::create_directories(dir);
  auto file = cluster_file_with(cluster, {node_named(cluster, p.a), node_named(cluster, p.b)});
  if (index > 0)
    file["overrides"]["container"]["env"]["JAX_COORDINATOR_PORT"] =
        std::to_string(std::stoi(kDefaultCoordinatorPort) + static_cast<int>(index));
  write_json(dir / "cluster.json", file);
  auto r =
      suite_request("jaxmaxtext_distributed", spec.config, dir, dir.filename().string(), p.a + "+" + p.b);
  r.argv.push_back("--gtest_filter=" +
                   stage_names::filter_of({stage_names::kSetup, stage_names::kTrainingRun}));
  for (const auto& a : spec.args)
    if (a.rfind("--gtest_filter", 0) != 0) r.argv.push_back(a);
  return r;
}

void read_pair(PairRun& p, const ProcResult& result, const fs::path& dir) {
  std::ofstream(dir / "suite.log") << result.out << result.err;
  const auto n = read_fleet_node(result.label, dir / "report" / "results.json");
  p.status = n.status;
  p.seconds += result.seconds;
  p.steps += n.steps * 2;  // two nodes
  auto phases = n.phases;
  phases.set_other(result.seconds);
  p.phases.add(phases, 1);
  p.failure = !n.status ? result.describe() + " (" + n.failure + ")" : n.failure;
  for (const auto& [figure, v] : n.figures)
    if (figure.metric == to_string(Metric::StepTimeP50Ms) && !figure.is_probe()) {
      p.sweep = figure.sweep;
      p.step_ms = v;
      if (const auto it = n.intervals.find(figure); it != n.intervals.end())
        p.half_width_ms = (it->second.second - it->second.first) / 2;
      break;
    }
}

}  // namespace

PairsResult run_pairs(const NodeRuns& spec, const Cluster& cluster, const std::vector<std::string>& healthy,
                      double min_deviation) {
  const PairRunner runner = [&](std::vector<PairRun>& batch) {
    std::vector<ProcRequest> reqs;
    std::vector<fs::path> dirs;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& p = batch[i];
      // A folder per run: a confirming try reading the first try's results would confirm it.
      dirs.push_back(spec.root / (std::to_string(p.round) + "-" + folder_name(p.a) + "+" + folder_name(p.b) +
                                  (p.tries > 1 ? "-try" + std::to_string(p.tries) : "")));
      reqs.push_back(pair_request(spec, cluster, p, i, dirs.back()));
    }
    const auto results = run_all(reqs, spec.max_parallel ? spec.max_parallel : reqs.size(), &g_interrupted);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      read_pair(batch[i], results[i], dirs[i]);
      spdlog::info("{} pairs: round {} {} + {} ended {}, {} ms a step", spec.log_prefix, batch[i].round,
                   batch[i].a, batch[i].b, to_string(batch[i].status, "without results"),
                   short_number(batch[i].step_ms));
    }
  };
  spdlog::info("{} pairs: {} healthy node(s), two at a time, in {}", spec.log_prefix, healthy.size(),
               spec.root.string());
  return localise_links(healthy, runner, min_deviation);
}

std::string Allocation::acquire() {
  if (!cluster_.is_slurm()) return "";
  auto a = slurm_allocate(cluster_.slurm, std::chrono::hours(1));
  cluster_.slurm.job_id = a.job_id;  // granted: released even when its hosts could not be read
  if (!a.ok()) return a.error;
  for (std::size_t i = 0; i < a.hosts.size(); ++i)
    cluster_.nodes[i].name = cluster_.nodes[i].host = a.hosts[i];
  return "";
}

void Allocation::release() {
  if (cluster_.slurm.job_id.empty()) return;
  if (auto why = slurm_release(cluster_.slurm.job_id); !why.empty()) spdlog::error("{}: {}", who_, why);
  cluster_.slurm.job_id.clear();
}

}  // namespace cvs::certify
