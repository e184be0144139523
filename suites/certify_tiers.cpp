#include "certify_tiers.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <fstream>

#include "cvs/base/format.hpp"
#include "cvs/base/sha256.hpp"
#include "cvs/base/utc_time.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/exec/slurm.hpp"
#include "cvs/fleet/fleet_pairs.hpp"
#include "fleet_runs.hpp"

#ifndef CVS_GIT_COMMIT
#define CVS_GIT_COMMIT "unknown"
#endif
#ifndef CVS_VERSION
#define CVS_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using J = nlohmann::ordered_json;

namespace cvs::certify {
namespace {

constexpr const char* kCmdLine = "(command line)";

std::string file_sha(const fs::path& p) {
  if (p.empty()) return "";
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return sha256_hex(bytes);
}

J read_json(const fs::path& p, const std::string& what) {
  std::ifstream in(p);
  if (!in) throw ConfigError(p.string(), "", what + " cannot be read", "pass an existing file");
  try {
    return J::parse(in);
  } catch (const std::exception& e) {
    throw ConfigError(p.string(), "", what + " does not parse: " + e.what(), "fix the JSON");
  }
}

// --resume: the certificate in the folder, and the options it was started with.
Certificate read_prior(Options& o) {
  const fs::path file = o.resume / "certificate.json";
  if (!fs::exists(file))
    throw ConfigError(file.string(), "", "no certificate to resume in " + o.resume.string(),
                      "pass the folder an earlier cvs certify wrote (its --output)");
  // ConfigError (the file, the JSON pointer, the fix) from the reader: exit 2 at the edge.
  const Certificate c = certificate_from_json(read_json(file, "the certificate"), file.string());
  auto keep = [](fs::path& opt, const std::string& was) {
    if (opt.empty() && !was.empty()) opt = was;
  };
  keep(o.cluster, c.inputs.cluster_file);
  keep(o.config, c.inputs.config_file);
  keep(o.distributed_config, c.inputs.distributed_config_file);
  keep(o.baseline, c.inputs.baseline_file);
  // The same node set and thresholds: the policy it was started with.
  o.min_nodes = c.inputs.min_nodes;
  o.drain = c.inputs.drain;
  o.fixed_steps = !c.inputs.early_stop;
  o.per_doubling_pct = c.inputs.scaling_per_doubling_pct;
  o.policy.max_z = c.inputs.max_z;
  o.policy.min_deviation = c.inputs.min_deviation;
  o.policy.min_fleet = c.inputs.min_fleet;
  o.suite_args = c.inputs.suite_args;
  return c;
}

void same_file(const Options& o, const char* key, const std::string& was_sha, const fs::path& now) {
  const auto sha = file_sha(now);
  if (sha == was_sha) return;
  throw ConfigError((o.resume / "certificate.json").string(), std::string("/inputs/") + key,
                    "this certification was started with another file (" + now.string() + " has sha256 " +
                        (sha.empty() ? "none" : sha.substr(0, 12)) + ", it had " +
                        (was_sha.empty() ? "none" : was_sha.substr(0, 12)) + ")",
                    "resume with the files it was started with, or start a new certification (--output)");
}

SuiteConfig load_mode(const fs::path& file, const Cluster& cluster, Mode want, const char* flag) {
  if (file.empty())
    throw ConfigError(kCmdLine, "", std::string(flag) + " is required",
                      std::string("pass ") + flag + " FILE");
  auto cfg = load_config_for_cluster(file, cluster);
  if (cfg.mode != want)
    throw ConfigError(
        file.string(), "/mode",
        std::string(flag) + " takes a " + (want == Mode::Single ? "single-node" : "distributed") + " config",
        want == Mode::Single ? "pass e.g. configs/cpu_jaxmaxtext_tiny_single.json"
                             : "pass e.g. configs/cpu_jaxmaxtext_tiny_distributed.json");
  return cfg;
}

// A calibration holds for the sweeps it measured: each must be one the single config runs.
void check_baseline(Options& o, const SuiteConfig& single) {
  if (o.baseline.empty()) return;
  o.policy.baseline = read_fleet_baseline(o.baseline);
  for (const auto& [figure, st] : o.policy.baseline) {
    const std::string& sweep = figure.sweep;
    if (std::find(single.runs.begin(), single.runs.end(), sweep) == single.runs.end())
      throw ConfigError(
          o.baseline.string(), "/_calibration/statistics/" + sweep,
          "calibrated for sweep '" + sweep + "', which " + o.config.string() + " does not run",
          "calibrate this config (cvs calibrate --config " + o.config.string() + "), or drop --baseline");
  }
}

// The config as every run of the certification reads it: its threshold file by absolute path and
// every speed gate with on_inconclusive "extend" (stop once decisive, extend when not).
fs::path write_run_config(const fs::path& from, const SuiteConfig& loaded, const fs::path& to,
                          bool fixed_steps) {
  auto j = read_json(from, "the config");
  if (!loaded.threshold_path.empty()) j["threshold_json"] = loaded.threshold_path.string();
  j["statistics"]["on_inconclusive"] = fixed_steps ? "fail" : "extend";
  if (!fs::exists(to)) fleet::write_json(to, j);
  return to;
}

std::vector<std::string> node_names(const Cluster& c) {
  std::vector<std::string> v;
  for (const auto& n : c.nodes) v.push_back(n.name);
  return v;
}

void new_certificate(const Options& o, Inputs& in) {
  auto& c = in.certificate;
  c.tool_version = CVS_VERSION;
  c.git_commit = CVS_GIT_COMMIT;
  c.started_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  auto& i = c.inputs;
  i.cluster_file = o.cluster.string();
  i.cluster_sha256 = file_sha(o.cluster);
  i.config_file = o.config.string();
  i.config_sha256 = file_sha(o.config);
  i.distributed_config_file = o.distributed_config.string();
  i.distributed_config_sha256 = file_sha(o.distributed_config);
  i.baseline_file = o.baseline.string();
  i.baseline_sha256 = file_sha(o.baseline);
  if (!o.baseline.empty())
    i.baseline_provenance = read_json(o.baseline, "the calibration").value("_calibration", J());
  if (i.baseline_provenance.is_object()) i.baseline_provenance.erase("statistics");
  i.min_nodes = o.min_nodes;
  i.budget_minutes = o.budget_minutes;
  i.scaling_per_doubling_pct = o.per_doubling_pct;
  i.max_z = o.policy.max_z;
  i.min_deviation = o.policy.min_deviation;
  i.min_fleet = o.policy.min_fleet;
  i.drain = o.drain;
  i.early_stop = !o.fixed_steps;
  i.suite_args = o.suite_args;
  std::vector<TierKind> kinds = {TierKind::Preflight, TierKind::Nodes};
  if (!o.distributed_config.empty()) kinds.insert(kinds.end(), {TierKind::Links, TierKind::Scale});
  for (auto k : kinds) {
    TierRecord t;
    t.kind = k;
    c.tiers.push_back(t);
  }
}

}  // namespace

Inputs load_inputs(Options& o) {
  Inputs in;
  std::optional<Certificate> prior;
  if (!o.resume.empty()) prior = read_prior(o);
  if (o.cluster.empty()) throw ConfigError(kCmdLine, "", "--cluster is required", "pass --cluster FILE");
  in.cluster = load_cluster(o.cluster);
  if (in.cluster.slurm.existing_job)
    throw ConfigError(o.cluster.string(), "/slurm/job_id", "cvs certify allocates its nodes itself",
                      "remove job_id and nodelist; set slurm.nodes (and extra_args such as --nodelist)");
  if (o.drain && !in.cluster.is_slurm())
    throw ConfigError(o.cluster.string(), "/scheduler",
                      "--drain drains Slurm nodes, and this cluster has no Slurm",
                      "drop --drain, or use a cluster file with \"scheduler\": \"slurm\"");
  const auto single = load_mode(o.config, in.cluster, Mode::Single, "--config");
  std::optional<SuiteConfig> dist;
  if (!o.distributed_config.empty())
    dist = load_mode(o.distributed_config, in.cluster, Mode::Distributed, "--distributed-config");
  check_baseline(o, single);
  if (o.min_nodes > in.cluster.nodes.size())
    throw ConfigError(kCmdLine, "",
                      "--min-nodes " + std::to_string(o.min_nodes) + " is more than the cluster's " +
                          std::to_string(in.cluster.nodes.size()) + " node(s)",
                      "pass at most the number of nodes in " + o.cluster.string());
  if (prior) {
    same_file(o, "cluster_sha256", prior->inputs.cluster_sha256, o.cluster);
    same_file(o, "config_sha256", prior->inputs.config_sha256, o.config);
    same_file(o, "distributed_config_sha256", prior->inputs.distributed_config_sha256, o.distributed_config);
    same_file(o, "baseline_sha256", prior->inputs.baseline_sha256, o.baseline);
    in.certificate = std::move(*prior);
  } else {
    if (fs::exists(o.output))
      throw ConfigError(kCmdLine, "", o.output.string() + " exists: a certification folder is never reused",
                        "pass a new --output folder, or --resume " + o.output.string() + " to continue it");
    new_certificate(o, in);
  }
  fs::create_directories(o.output / "inputs");
  in.single_config =
      write_run_config(o.config, single, o.output / "inputs" / "single_config.json", o.fixed_steps);
  if (dist) {
    in.distributed_config = write_run_config(o.distributed_config, *dist,
                                             o.output / "inputs" / "distributed_config.json", o.fixed_steps);
    in.first_sweep = dist->runs.empty() ? "" : dist->runs.front();
    in.distributed_steps = in.first_sweep.empty() ? 0 : dist->steps_for(in.first_sweep);
  }
  return in;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  const Options& o;
  Inputs& in;
  Clock::time_point start = Clock::now();

  Certificate& cert() { return in.certificate; }
  void save() { fleet::write_json(o.output / "certificate.json", to_json(cert())); }
  double elapsed_min() const { return std::chrono::duration<double>(Clock::now() - start).count() / 60; }

  std::vector<Node> healthy_nodes() const {
    std::vector<Node> v;
    for (const auto& name : in.certificate.healthy()) v.push_back(fleet::node_named(in.cluster, name));
    return v;
  }
  // A new folder for a tier's runs (a tier cut short earlier keeps its folder).
  fs::path tier_dir(TierKind k) const {
    fs::path d = o.output / to_string(k);
    for (int i = 2; fs::exists(d); ++i) d = o.output / (std::string(to_string(k)) + "-" + std::to_string(i));
    return d;
  }
  // The user's suite arguments, their --gtest_filter replaced by `filter` when given.
  std::vector<std::string> args(const std::string& filter) const {
    std::vector<std::string> a;
    for (const auto& x : o.suite_args)
      if (filter.empty() || x.rfind("--gtest_filter", 0) != 0) a.push_back(x);
    if (!filter.empty()) a.push_back("--gtest_filter=" + filter);
    return a;
  }
  fleet::NodeRuns spec(const char* suite, const fs::path& config, const fs::path& root,
                       const std::string& filter, const char* prefix) const {
    fleet::NodeRuns s;
    s.suite = suite;
    s.config = config;
    s.root = root;
    s.args = args(filter);
    s.max_parallel = o.max_parallel;
    s.log_prefix = prefix;
    return s;
  }
};

void account(TierRecord& t, const std::vector<FleetNode>& runs) {
  for (const auto& n : runs) {
    t.node_minutes += n.seconds / 60;
    t.node_steps += n.steps;
  }
}

void exclude(TierRecord& t, const std::string& node, const std::string& evidence) {
  for (const auto& e : t.excluded)
    if (e.node == node) return;
  t.excluded.push_back({node, to_string(t.kind), evidence});
}

bool none_ran(const std::vector<FleetNode>& runs) {
  return !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const auto& n) { return !n.status; });
}

// Preflight: every node's setup stage (single config), and with a distributed config its RDMA
// check; the probe's facts against the majority, missing data failing closed.
void tier_preflight(Run& r, TierRecord& t) {
  const auto nodes = r.healthy_nodes();
  const fs::path dir(t.dir);
  auto setup = fleet::run_nodes(
      r.spec("jaxmaxtext_single", r.in.single_config, dir / "setup", "test_setup.*", "certify preflight"),
      r.in.cluster, nodes);
  account(t, setup);
  std::vector<FleetNode> rdma;
  if (!r.in.distributed_config.empty() && !g_interrupted.load()) {
    rdma = fleet::run_nodes(r.spec("jaxmaxtext_distributed", r.in.distributed_config, dir / "rdma",
                                   "test_setup.*:test_setup_rdma.*", "certify preflight rdma"),
                            r.in.cluster, nodes);
    account(t, rdma);
  }
  auto policy = r.o.policy;
  policy.baseline.clear();  // no training yet
  const auto score = score_fleet(setup, policy);
  for (const auto& ns : score.nodes)
    if (ns.suspect) exclude(t, ns.name, fleet_reasons(ns));
  for (const auto& n : rdma)
    if (n.status != Outcome::Pass) exclude(t, n.name, "RDMA/setup with the distributed config: " + n.failure);
  t.outcome = none_ran(setup) ? Outcome::Error : t.excluded.empty() ? Outcome::Pass : Outcome::Fail;
  t.summary = std::to_string(nodes.size() - t.excluded.size()) + " of " + std::to_string(nodes.size()) +
              " node(s) ready (setup, probe facts agree" + (rdma.empty() ? "" : ", RDMA") + ")";
}

bool speed_only(const NodeScore& ns, const FleetNode& n) {
  if (n.status != Outcome::Pass || ns.evidence.empty()) return false;
  for (const auto& e : ns.evidence)  // the telemetry's words say why; they accuse nothing
    if (e.figure != FigureKey::kind("telemetry") && e.figure.metric != "tokens_per_sec_per_gpu" &&
        e.figure.metric != "step_time_p50_ms")
      return false;
  return true;
}

const FleetNode* find_node(const std::vector<FleetNode>& v, const std::string& name) {
  for (const auto& n : v)
    if (n.name == name) return &n;
  return nullptr;
}

// Nodes: fleet mode's per-node runs and scoring; a suspect on speed alone runs once more.
void tier_nodes(Run& r, TierRecord& t) {
  const auto nodes = r.healthy_nodes();
  const fs::path dir(t.dir);
  auto spec = r.spec("jaxmaxtext_single", r.in.single_config, dir, "", "certify nodes");
  spec.thresholds = r.o.baseline;
  const auto t0 = Clock::now();
  auto runs = fleet::run_nodes(spec, r.in.cluster, nodes);
  t.run_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  account(t, runs);
  auto score = score_fleet(runs, r.o.policy);
  std::vector<Node> again;
  for (const auto& ns : score.nodes)
    if (ns.suspect && speed_only(ns, *find_node(runs, ns.name)))
      again.push_back(fleet::node_named(r.in.cluster, ns.name));
  if (!again.empty() && !g_interrupted.load()) {
    spec.root = dir / "rerun";
    spdlog::info("certify nodes: {} node(s) slow on speed alone run once more", again.size());
    const auto second = fleet::run_nodes(spec, r.in.cluster, again);
    account(t, second);
    for (const auto& n : second) {
      t.reruns.push_back(n.name);
      for (auto& old : runs)
        if (old.name == n.name) old = n;
    }
    score = score_fleet(runs, r.o.policy);
  }
  for (const auto& ns : score.nodes) {
    if (!ns.suspect) continue;
    std::string ev = fleet_reasons(ns);  // the telemetry's words among them
    if (std::find(t.reruns.begin(), t.reruns.end(), ns.name) != t.reruns.end())
      ev += " (slow again when run once more)";
    exclude(t, ns.name, ev);
  }
  t.outcome = none_ran(runs) ? Outcome::Error : t.excluded.empty() ? Outcome::Pass : Outcome::Fail;
  t.summary = std::to_string(nodes.size() - t.excluded.size()) + " of " + std::to_string(nodes.size()) +
              " node(s) healthy" + (score.too_small ? " (too few passing runs to score the fleet)" : "") +
              (t.reruns.empty() ? "" : "; " + std::to_string(t.reruns.size()) + " run once more");
}

// Links: two-node runs over the healthy nodes; a node slow with every partner is excluded, a pair
// slow only together is a slow link (the tier fails: no node to blame).
void tier_links(Run& r, TierRecord& t) {
  const auto healthy = r.cert().healthy();
  auto spec = r.spec("jaxmaxtext_distributed", r.in.distributed_config, t.dir, "", "certify links");
  const auto pairs = fleet::run_pairs(spec, r.in.cluster, healthy, r.o.policy.min_deviation);
  fleet::write_json(fs::path(t.dir) / "pairs.json", pairs_json(pairs));
  bool any = false;
  for (const auto& p : pairs.runs) {
    t.node_minutes += 2 * p.seconds / 60;
    t.node_steps += p.steps;
    any = any || p.status.has_value();
  }
  for (const auto& [node, ev] : pairs.suspects) exclude(t, node, ev);
  std::string links;
  for (const auto& [a, b] : pairs.slow_links) links += (links.empty() ? "" : ", ") + a + " <-> " + b;
  t.outcome = !any ? Outcome::Error : (!t.excluded.empty() || !links.empty()) ? Outcome::Fail : Outcome::Pass;
  t.summary = std::to_string(pairs.runs.size()) + " two-node run(s), reference " +
              short_number(pairs.reference_ms) + " ms a step" +
              (links.empty() ? "" : "; slow link(s): " + links);
}

// The distributed config with `steps` steps (a rung run again for an interval), written once.
fs::path config_with_steps(const Run& r, long long steps) {
  const fs::path p = r.o.output / "inputs" / ("distributed_config_" + std::to_string(steps) + "_steps.json");
  if (fs::exists(p)) return p;
  auto j = read_json(r.in.distributed_config, "the config");
  j["train_params"]["maxtext_config"]["steps"] = steps;
  if (j.contains("sweeps") && j["sweeps"].contains(r.in.first_sweep) &&
      j["sweeps"][r.in.first_sweep].is_object() && j["sweeps"][r.in.first_sweep].contains("steps"))
    j["sweeps"][r.in.first_sweep]["steps"] = steps;
  fleet::write_json(p, j);
  return p;
}

// One run of a rung: the distributed suite on the first k nodes, in `rdir`.
void run_rung_once(Run& r, const std::vector<Node>& nodes, bool last, const fs::path& config,
                   const fs::path& rdir, Rung& g) {
  const auto k = g.nodes;
  fs::create_directories(rdir);
  fleet::write_json(rdir / "cluster.json",
                    cluster_file_with(r.in.cluster, std::vector<Node>(nodes.begin(), nodes.begin() + k)));
  auto req = fleet::suite_request("jaxmaxtext_distributed", config, rdir, "scale-" + std::to_string(k),
                                  std::to_string(k) + " node(s)");
  // The last rung is the full-scale run: its own gates (the user's filter); the others train.
  const auto a = r.args(last ? "" : "test_setup.*:sweep/test_training_run.*");
  req.argv.insert(req.argv.end(), a.begin(), a.end());
  const auto res = run_all({req}, 1, &g_interrupted).front();
  std::ofstream(rdir / "suite.log") << res.out << res.err;
  const auto n = read_fleet_node(req.label, rdir / "report" / "results.json");
  g.status = n.status;
  g.failure = n.status ? n.failure : res.describe() + " (" + n.failure + ")";
  const FigureKey key{g.sweep, "tokens_per_sec_per_gpu"};
  g.tok_s_per_gpu = 0;
  if (auto it = n.steady.find(key); it != n.steady.end())
    g.tok_s_per_gpu = it->second;
  else if (auto f = n.figures.find(key); f != n.figures.end())
    g.tok_s_per_gpu = f->second;
  g.interval.reset();
  if (auto it = n.intervals.find(key); it != n.intervals.end()) g.interval = it->second;
  g.seconds += res.seconds;
  g.steps += n.steps * static_cast<long long>(k);
  spdlog::info("certify scale: {} node(s) ended {}, {} tok/s/GPU{}", k,
               to_string(n.status, "without results"), short_number(g.tok_s_per_gpu),
               g.interval ? "" : " (no steady-state interval)");
}

// A rung, extended as a speed gate is: a run that ends without a steady-state interval (too few
// steady steps for its noise) runs again with twice the steps, at most twice.
Rung run_rung(Run& r, const std::vector<Node>& nodes, std::size_t k, bool last, const fs::path& dir) {
  Rung g;
  g.nodes = k;
  g.sweep = r.in.first_sweep;
  const fs::path rdir = dir / (std::to_string(k) + "-nodes");
  run_rung_once(r, nodes, last, r.in.distributed_config, rdir, g);
  for (long long steps = r.in.distributed_steps * 2;
       g.status == Outcome::Pass && !g.interval && r.in.distributed_steps > 0 && !g_interrupted.load() &&
       steps <= r.in.distributed_steps * 4;
       steps *= 2) {
    spdlog::info("certify scale: {} node(s) once more with {} steps, for an interval", k, steps);
    run_rung_once(r, nodes, last, config_with_steps(r, steps), rdir / ("steps-" + std::to_string(steps)), g);
  }
  return g;
}

std::string rung_words(const Rung& g) {
  if (!g.efficiency_pct)
    return std::to_string(g.nodes) + " node(s): " + to_string(g.status, "no results") +
           (g.failure.empty() ? "" : " (" + g.failure + ")");
  std::string s = fmt::format("{} node(s) {:.1f} %", g.nodes, *g.efficiency_pct);
  s += g.efficiency_lo_pct ? fmt::format(" [{:.1f}, {:.1f}]", *g.efficiency_lo_pct, *g.efficiency_hi_pct)
                           : " (no interval: too few steady steps)";
  return s + fmt::format(" vs {:.1f} %: {}", g.bound_pct, to_string(g.verdict));
}

// Scale: the ladder 1, 2, 4, ..., all healthy nodes; each rung's efficiency against the 1-node rung.
void tier_scale(Run& r, TierRecord& t) {
  const auto nodes = r.healthy_nodes();
  const auto rungs = ladder(nodes.size());
  for (std::size_t i = 0; i < rungs.size() && !g_interrupted.load(); ++i)
    t.rungs.push_back(run_rung(r, nodes, rungs[i], i + 1 == rungs.size(), t.dir));
  score_ladder(t.rungs, r.o.per_doubling_pct / 100);
  Outcome worst = Outcome::Pass;
  std::string named, words;
  for (const auto& g : t.rungs) {
    t.node_minutes += g.seconds * static_cast<double>(g.nodes) / 60;
    t.node_steps += g.steps;
    words += (words.empty() ? "" : "; ") + rung_words(g);
    if (g.verdict == Outcome::Fail && named.empty()) named = std::to_string(g.nodes);
    if (g.verdict == Outcome::Error || (g.verdict == Outcome::Fail && worst != Outcome::Error) ||
        (g.verdict == Outcome::Inconclusive && worst == Outcome::Pass))
      worst = g.verdict;
  }
  if (!t.rungs.empty() && t.rungs.back().status == Outcome::Fail && worst != Outcome::Error)
    worst = Outcome::Fail;
  t.outcome = worst;
  t.summary = (named.empty() ? "" : "efficiency falls below the bound at " + named + " nodes; ") + words;
  if (!t.rungs.empty() && t.rungs.back().status == Outcome::Fail)
    t.summary += "; the full-scale run's own gates failed: " + t.rungs.back().failure;
}

std::string cannot_start(const Run& r, const TierRecord& t) {
  const auto healthy = r.in.certificate.healthy().size();
  if (healthy == 0) return "no healthy node left";
  if (t.kind == TierKind::Links && healthy < 2) return "fewer than two healthy nodes: no pair";
  return "";
}

void run_tier(Run& r, TierRecord& t) {
  t.state = TierState::Pending;
  t.why_not_run.clear();
  t.excluded.clear();
  t.reruns.clear();
  t.rungs.clear();
  t.node_minutes = 0;
  t.node_steps = 0;
  t.nodes_in = r.cert().healthy();
  t.dir = r.tier_dir(t.kind).string();
  fs::create_directories(t.dir);
  t.started_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  const auto t0 = Clock::now();
  spdlog::info("certify: {} tier on {} node(s), in {}", to_string(t.kind), t.nodes_in.size(), t.dir);
  switch (t.kind) {
    case TierKind::Preflight:
      tier_preflight(r, t);
      break;
    case TierKind::Nodes:
      tier_nodes(r, t);
      break;
    case TierKind::Links:
      tier_links(r, t);
      break;
    case TierKind::Scale:
      tier_scale(r, t);
      break;
  }
  t.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  t.ended_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  if (g_interrupted.load()) {  // runs cut short say nothing of a node
    t.state = TierState::NotRun;
    t.why_not_run = "interrupted (Ctrl-C) during this tier: its runs in " + t.dir +
                    " are not counted; cvs certify --resume " + r.o.output.string() + " runs it again";
    t.excluded.clear();
    return;
  }
  t.state = TierState::Decided;
  spdlog::info("certify: {} tier {}: {}", to_string(t.kind), to_string(t.outcome, "?"), t.summary);
}

void drain(Run& r) {
  auto& c = r.cert();
  for (const auto& e : c.excluded) {
    const auto argv = slurm_drain_argv(fleet::node_named(r.in.cluster, e.node).host, e.evidence);
    const auto res = run_one({argv, std::chrono::seconds(30), "scontrol"});
    c.drain_commands.push_back(shell_join(argv) + (res.ok() ? "" : "  # failed: " + res.describe()));
    if (!res.ok()) spdlog::error("certify: drain of {} failed: {}", e.node, res.describe());
  }
}

}  // namespace

int run(const Options& o, Inputs& in) {
  Run r{o, in};
  auto& c = in.certificate;
  fleet::Allocation alloc(in.cluster, "certify");
  if (auto why = alloc.acquire(); !why.empty()) {
    c.verdict = Verdict::Error;
    c.verdict_reason = "no Slurm allocation: " + why;
    r.save();
    return 3;
  }
  if (c.inputs.hosts.empty()) c.inputs.hosts = node_names(in.cluster);
  std::string stop;
  for (auto& t : c.tiers) {
    if (t.state == TierState::Decided) {
      spdlog::info("certify: {} tier already decided ({}): kept", to_string(t.kind),
                   to_string(t.outcome, "?"));
      continue;
    }
    if (stop.empty() && g_interrupted.load())
      stop = "interrupted (Ctrl-C): cvs certify --resume " + o.output.string();
    // The budget holds a tier against one run's time as this certification measured it (a
    // resumed one's kept nodes tier too).
    if (stop.empty())
      stop = over_budget(t.kind, c.healthy().size(), run_estimate_s(c), o.budget_minutes, r.elapsed_min());
    const auto why = stop.empty() ? cannot_start(r, t) : stop;
    if (!why.empty()) {
      t.state = TierState::NotRun;
      t.why_not_run = why;
      r.save();
      continue;
    }
    run_tier(r, t);
    if (t.state != TierState::Decided)
      stop = "interrupted (Ctrl-C): cvs certify --resume " + o.output.string();
    r.save();
  }
  alloc.release();
  c.ended_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  decide(c);
  if (o.drain && in.cluster.is_slurm() && c.verdict != Verdict::Error) drain(r);
  r.save();
  return exit_code(c);
}

}  // namespace cvs::certify
