#include "cvs/certify/tiers.hpp"
#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/catalog/stage_names.hpp"
#include "cvs/certify/tier_runs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "cvs/base/format.hpp"
#include "cvs/base/utc_time.hpp"

namespace fs = std::filesystem;

namespace cvs::certify {

using Clock = std::chrono::steady_clock;

void Certification::save() const {
  certify::write_json(o.output / "certificate.json", to_json(in.certificate));
}

double Certification::elapsed_min() const {
  return std::chrono::duration<double>(Clock::now() - start).count() / 60;
}

std::vector<Node> Certification::healthy_nodes() const {
  std::vector<Node> v;
  for (const auto& name : in.certificate.healthy()) v.push_back(certify::node_named(in.cluster, name));
  return v;
}

fs::path Certification::tier_dir(TierKind k) const {
  fs::path d = o.output / to_string(k);
  for (int i = 2; fs::exists(d); ++i) d = o.output / (std::string(to_string(k)) + "-" + std::to_string(i));
  return d;
}

std::vector<std::string> Certification::args(const std::string& filter) const {
  std::vector<std::string> a;
  for (const auto& x : o.suite_args)
    if (filter.empty() || x.rfind("--gtest_filter", 0) != 0) a.push_back(x);
  if (!filter.empty()) a.push_back("--gtest_filter=" + filter);
  // Every run records where the certification does (one store, resumed or not).
  if (!o.history.empty()) a.insert(a.end(), {"--history", o.history});
  if (const auto scope = runner.warm_scope(); !scope.empty()) a.insert(a.end(), {"--warm-scope", scope});
  return a;
}

certify::NodeRuns Certification::spec(const char* suite, const fs::path& config, const fs::path& root,
                                      const std::string& filter, const char* prefix) const {
  certify::NodeRuns s;
  s.suite = suite;
  s.config = config;
  s.root = root;
  s.args = args(filter);
  s.max_parallel = o.max_parallel;
  s.log_prefix = prefix;
  return s;
}

namespace {

void account(TierRecord& t, const std::vector<FleetNode>& runs) {
  for (const auto& n : runs) {
    t.node_minutes += n.seconds / 60;
    t.node_steps += n.steps;
    t.phases.add(n.phases, 1);
  }
}

bool is_excluded(const TierRecord& t, const std::string& node) {
  return std::any_of(t.excluded.begin(), t.excluded.end(),
                     [&](const Exclusion& e) { return e.node == node; });
}

void exclude(TierRecord& t, const std::string& node, const std::string& evidence) {
  if (is_excluded(t, node)) return;
  t.excluded.push_back({node, to_string(t.kind), evidence});
}

bool none_ran(const std::vector<FleetNode>& runs) {
  return !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const auto& n) { return !n.status; });
}

Outcome outcome_of(const std::vector<FleetNode>& runs, const TierRecord& t) {
  return none_ran(runs) ? Outcome::Error : t.excluded.empty() ? Outcome::Pass : Outcome::Fail;
}

// Preflight: every node's setup stage (single config), and with a distributed config its RDMA
// check; the probe's facts against the majority, missing data failing closed.
class PreflightTier final : public Tier {
 public:
  TierKind kind() const override { return TierKind::Preflight; }
  void run(Certification& c, TierRecord& t) const override {
    const auto nodes = c.healthy_nodes();
    const fs::path dir(t.dir);
    auto setup = c.runner.each(c.spec("jaxmaxtext_single", c.in.single_config, dir / "setup",
                                      stage_names::filter_of({stage_names::kSetup}), "certify preflight"),
                               nodes);
    account(t, setup);
    std::vector<FleetNode> rdma;
    if (!c.in.distributed_config.empty() && !c.runner.interrupted()) {
      rdma = c.runner.each(c.spec("jaxmaxtext_distributed", c.in.distributed_config, dir / "rdma",
                                  stage_names::filter_of({stage_names::kSetup, stage_names::kSetupRdma}),
                                  "certify preflight rdma"),
                           nodes);
      account(t, rdma);
    }
    // The warm trainers these runs started import still: the next tier measures speed.
    if (!c.runner.interrupted()) c.runner.await_warm_scope({c.in.single_config, c.in.distributed_config});
    auto policy = c.o.policy;
    policy.baseline.clear();  // no training yet
    for (const auto& ns : score_fleet(setup, policy).nodes)
      if (ns.suspect) exclude(t, ns.name, fleet_reasons(ns));
    for (const auto& n : rdma)
      if (n.status != Outcome::Pass)
        exclude(t, n.name, "RDMA/setup with the distributed config: " + n.failure);
    t.outcome = outcome_of(setup, t);
    t.summary = std::to_string(nodes.size() - t.excluded.size()) + " of " + std::to_string(nodes.size()) +
                " node(s) ready (setup, probe facts agree" + (rdma.empty() ? "" : ", RDMA") + ")";
  }
};

// A suspect whose every piece of evidence is speed or time lost to stalls (or the telemetry's
// words, which accuse nothing): what a second run may not show again.
bool speed_only(const NodeScore& ns, const FleetNode& n) {
  if (n.status != Outcome::Pass || ns.evidence.empty()) return false;
  for (const auto& e : ns.evidence)
    if (e.figure != FigureKey::kind("telemetry") &&
        e.figure.metric != to_string(cvs::Metric::TokensPerSecPerGpu) &&
        e.figure.metric != to_string(cvs::Metric::StepTimeP50Ms) &&
        e.figure.metric != to_string(cvs::Metric::TimeLostPct))
      return false;
  return true;
}

const FleetNode& find_node(const std::vector<FleetNode>& v, const std::string& name) {
  for (const auto& n : v)
    if (n.name == name) return n;
  throw std::logic_error("no run of node " + name);
}

// What the nodes tier could have seen: its detection power over the healthy nodes' tokens/s, the
// best of its sweeps (a node slower on every sweep is flagged on the one that sees most), into the
// record and its summary, with the target it stepped for (--detect-slowdown-pct) and whether it
// met it (the fleet's own spread, or runs ending at their cap, can leave it short).
std::string power_words(TierRecord& t, const std::vector<FleetNode>& runs, const FleetPolicy& policy,
                        double confidence, double target_pct) {
  std::vector<FleetNode> healthy;
  for (const auto& n : runs)
    if (!is_excluded(t, n.name)) healthy.push_back(n);
  std::set<FigureKey> figures;
  for (const auto& n : healthy)
    for (const auto& [f, v] : n.figures)
      if (f.metric == to_string(Metric::TokensPerSecPerGpu)) figures.insert(f);
  std::optional<DetectionPower> best;
  for (const auto& f : figures)
    if (auto d = detection_power(healthy, f, policy, confidence);
        d && (!best || d->slowdown < best->slowdown))
      best = d;
  if (!best && figures.empty()) return "";
  if (!best)  // too few, or too far apart: no slowdown of one node stands out, a standstill included
    return fmt::format(
        "; no detection power: the {} healthy node(s)' tokens/s lie too far apart (or are too few) for the "
        "scoring to flag even a node at a standstill{}",
        healthy.size(), target_pct > 0 ? fmt::format("; target {:g} %: not met", target_pct) : "");
  t.detection_power_pct = best->slowdown * 100;
  t.detection_power_figure = best->figure.text();
  const std::string target = target_pct > 0
                                 ? fmt::format("; target {:g} %: {}", target_pct,
                                               *t.detection_power_pct <= target_pct ? "met" : "not met")
                                 : "";
  return fmt::format("; would have caught a node >= {:.1f} % slow ({}, 95 % power, {} nodes){}",
                     *t.detection_power_pct, t.detection_power_figure, best->nodes, target);
}

// The checkpoint save and resume, once per certification: on the first node the speed runs left
// healthy, after them (a node whose save or resume fails is excluded with its words).
void checkpoint_once(Certification& c, TierRecord& t, const std::vector<FleetNode>& runs) {
  const auto it = std::find_if(runs.begin(), runs.end(), [&](const FleetNode& n) {
    return n.status == Outcome::Pass && !is_excluded(t, n.name);
  });
  if (it == runs.end()) {
    t.ran += "; no checkpoint save and resume (no healthy node left)";
    return;
  }
  const auto spec =
      c.spec("jaxmaxtext_single", c.in.single_config, fs::path(t.dir) / "checkpoint",
             stage_names::filter_of({stage_names::kSetup, stage_names::kCheckpoint}), "certify checkpoint");
  const auto ck = c.runner.each(spec, {certify::node_named(c.in.cluster, it->name)});
  account(t, ck);
  const auto& n = ck.front();
  t.ran +=
      "; the checkpoint save and resume once, on " + n.name + " (" + to_string(n.status, "no results") + ")";
  if (n.status != Outcome::Pass) exclude(t, n.name, "checkpoint save and resume: " + n.failure);
}

// Nodes: fleet mode's per-node runs and scoring; a suspect on speed alone runs once more. Its
// question is each node's speed: every node runs the setup, the sweeps' training and their gates
// (no smoke: every sweep's first steps are one; no checkpoint: checkpoint_once), unless the
// user's --gtest_filter says which stages.
class NodesTier final : public Tier {
 public:
  TierKind kind() const override { return TierKind::Nodes; }
  void run(Certification& c, TierRecord& t) const override {
    const auto nodes = c.healthy_nodes();
    const bool own = user_filter(c.o);
    // Speed gates alone: a run may stop at a look once they are decisive (statistics.on_inconclusive
    // extend); the loss gates are the suite's own run's.
    const auto filter = own ? ""
                            : stage_names::filter_of({stage_names::kSetup, stage_names::kTrainingRun}) + ":" +
                                  stage_names::speed_metric_tests();
    t.ran = own ? "the stages the --gtest_filter keeps, on every node"
                : "the setup, the sweeps' training and speed gates on every node";
    if (c.in.stop_half_width_pct > 0)
      t.ran += fmt::format(" (each run until its tokens/s is within +-{:.1f} %, for a node {:g} % slow)",
                           c.in.stop_half_width_pct, c.in.certificate.inputs.detect_slowdown_pct);
    auto spec = c.spec("jaxmaxtext_single", c.in.single_config, t.dir, filter, "certify nodes");
    spec.thresholds = c.o.baseline;
    const auto t0 = Clock::now();
    auto runs = c.runner.each(spec, nodes);
    t.run_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    account(t, runs);
    auto score = score_fleet(runs, c.o.policy);
    std::vector<Node> again;
    for (const auto& ns : score.nodes)
      if (ns.suspect && speed_only(ns, find_node(runs, ns.name)))
        again.push_back(certify::node_named(c.in.cluster, ns.name));
    if (!again.empty() && !c.runner.interrupted()) {
      spec.root = fs::path(t.dir) / "rerun";
      spdlog::info("certify nodes: {} node(s) slow on speed alone run once more", again.size());
      const auto second = c.runner.each(spec, again);
      account(t, second);
      for (const auto& n : second) {
        t.reruns.push_back(n.name);
        for (auto& old : runs)
          if (old.name == n.name) old = n;
      }
      score = score_fleet(runs, c.o.policy);
    }
    for (const auto& ns : score.nodes) {
      if (!ns.suspect) continue;
      std::string ev = fleet_reasons(ns);  // the telemetry's words among them
      if (std::find(t.reruns.begin(), t.reruns.end(), ns.name) != t.reruns.end())
        ev += " (slow again when run once more)";
      exclude(t, ns.name, ev);
    }
    if (!own && c.in.checkpoint_resume && !c.runner.interrupted()) checkpoint_once(c, t, runs);
    t.outcome = outcome_of(runs, t);
    t.summary =
        std::to_string(nodes.size() - t.excluded.size()) + " of " + std::to_string(nodes.size()) +
        " node(s) healthy" + (score.too_small ? " (too few passing runs to score the fleet)" : "") +
        (t.reruns.empty() ? "" : "; " + std::to_string(t.reruns.size()) + " run once more") +
        power_words(t, runs, c.o.policy, c.in.confidence, c.in.certificate.inputs.detect_slowdown_pct);
  }
};

// Links: two-node runs over the healthy nodes; a node slow with every partner is excluded, a pair
// slow only together is a slow link (the tier fails: no node to blame).
class LinksTier final : public Tier {
 public:
  TierKind kind() const override { return TierKind::Links; }
  std::string cannot_start(std::size_t healthy) const override {
    return healthy == 0 ? "no healthy node left" : healthy < 2 ? "fewer than two healthy nodes: no pair" : "";
  }
  void run(Certification& c, TierRecord& t) const override {
    const auto spec = c.spec("jaxmaxtext_distributed", c.in.distributed_config, t.dir, "", "certify links");
    const auto pairs = c.runner.pairs(spec, c.cert().healthy(), c.o.policy.min_deviation);
    write_pairs_outputs(t.dir, pairs);
    bool any = false;
    for (const auto& p : pairs.runs) {
      t.node_minutes += 2 * p.seconds / 60;
      t.node_steps += p.steps;
      t.phases.add(p.phases, 2);
      any = any || p.status.has_value();
    }
    for (const auto& [node, ev] : pairs.suspects) exclude(t, node, ev);
    std::string links;
    for (const auto& [a, b] : pairs.slow_links) links += (links.empty() ? "" : ", ") + a + " <-> " + b;
    t.outcome = !any                                      ? Outcome::Error
                : (!t.excluded.empty() || !links.empty()) ? Outcome::Fail
                                                          : Outcome::Pass;
    t.summary = std::to_string(pairs.runs.size()) + " two-node run(s), reference " +
                short_number(pairs.reference_ms) + " ms a step" +
                (links.empty() ? "" : "; slow link(s): " + links);
    if (const auto d = link_detection_power(pairs, c.in.confidence)) {
      t.detection_power_pct = d->slowdown * 100;
      t.detection_power_figure = "pair step_time_p50_ms";
      t.summary +=
          fmt::format("; would have caught a link slowing its pair's step >= {:.1f} % (95 % power, {} pairs)",
                      *t.detection_power_pct, d->pairs);
    }
  }
};

// Scale: the ladder 1, 2, 4, ..., all healthy nodes; each rung's efficiency against the 1-node rung.
class ScaleTier final : public Tier {
 public:
  TierKind kind() const override { return TierKind::Scale; }
  void run(Certification& c, TierRecord& t) const override;

 private:
  static void run_once(Certification& c, const std::vector<Node>& nodes, bool last, const fs::path& config,
                       const fs::path& rdir, Rung& g);
  static Rung run_rung(Certification& c, const std::vector<Node>& nodes, std::size_t k, bool last,
                       const fs::path& dir);
};

// One run of a rung: the distributed suite on the first k nodes, in `rdir`.
void ScaleTier::run_once(Certification& c, const std::vector<Node>& nodes, bool last, const fs::path& config,
                         const fs::path& rdir, Rung& g) {
  const auto k = g.nodes;
  namespace st = stage_names;
  // The last rung is the full-scale run: its own gates, the stages the user's filter keeps or every
  // stage but the smoke (every sweep's first steps are one) and the checkpoint (once, the nodes
  // tier's); the others train.
  const auto filter = !last ? st::filter_of({st::kSetup, st::kTrainingRun})
                      : user_filter(c.o)
                          ? ""
                          : st::filter_of({st::kSetup, st::kSetupRdma, st::kTrainingRun, st::kMetric});
  const auto spec = c.spec("jaxmaxtext_distributed", config, rdir, filter, "certify scale");
  const auto n =
      c.runner.together(spec, std::vector<Node>(nodes.begin(), nodes.begin() + static_cast<long>(k)),
                        "scale-" + std::to_string(k), std::to_string(k) + " node(s)");
  g.status = n.status;
  g.failure = n.failure;
  const FigureKey key{g.sweep, std::string(to_string(Metric::TokensPerSecPerGpu))};
  g.tok_s_per_gpu = 0;
  if (auto it = n.steady.find(key); it != n.steady.end())
    g.tok_s_per_gpu = it->second;
  else if (auto f = n.figures.find(key); f != n.figures.end())
    g.tok_s_per_gpu = f->second;
  g.interval.reset();
  if (auto it = n.intervals.find(key); it != n.intervals.end()) g.interval = it->second;
  g.seconds += n.seconds;
  g.steps += n.steps * static_cast<long long>(k);
  g.phases.add(n.phases, 1);  // other_s: the runner's (suite_runs)
  spdlog::info("certify scale: {} node(s) ended {}, {} tok/s/GPU{}", k,
               to_string(n.status, "without results"), short_number(g.tok_s_per_gpu),
               g.interval ? "" : " (no steady-state interval)");
}

// A rung, extended as a speed gate is: a run that ends without a steady-state interval (too few
// steady steps for its noise) runs again with kRungRerunMultiples of its steps (2x, then 4x:
// certify/tier_runs.hpp).
Rung ScaleTier::run_rung(Certification& c, const std::vector<Node>& nodes, std::size_t k, bool last,
                         const fs::path& dir) {
  Rung g;
  g.nodes = k;
  g.sweep = c.in.first_sweep;
  const fs::path rdir = dir / (std::to_string(k) + "-nodes");
  run_once(c, nodes, last, c.in.distributed_config, rdir, g);
  const long long configured = c.in.distributed_steps;
  for (const long long m : kRungRerunMultiples) {
    if (g.status != Outcome::Pass || g.interval || configured <= 0 || c.runner.interrupted()) break;
    const long long steps = m * configured;
    spdlog::info("certify scale: {} node(s) once more with {} steps, for an interval", k, steps);
    run_once(c, nodes, last, distributed_config_with_steps(c.o, c.in, steps),
             rdir / ("steps-" + std::to_string(steps)), g);
  }
  return g;
}

std::string rung_words(const Rung& g) {
  if (!g.efficiency_pct)
    return std::to_string(g.nodes) + " node(s): " +
           (g.verdict == Outcome::NA ? to_string(g.verdict) : to_string(g.status, "no results")) +
           (g.failure.empty() ? "" : " (" + g.failure + ")");
  std::string s = fmt::format("{} node(s) {:.1f} %", g.nodes, *g.efficiency_pct);
  s += g.efficiency_lo_pct ? fmt::format(" [{:.1f}, {:.1f}]", *g.efficiency_lo_pct, *g.efficiency_hi_pct)
                           : " (no interval: too few steady steps)";
  return s + fmt::format(" vs {:.1f} %: {}", g.bound_pct, to_string(g.verdict));
}

// The full-scale rung is every healthy node: after exclusions, a count the config may not shard
// over (FSDP over 3 processes of a 256-wide model: JAX's IndivisibleError). Such a rung off the
// doublings decides nothing (N/A, in these words): the workload's shape, not the hardware; the
// ladder's doublings and the nodes and links tiers stand.
void set_aside_unshardable(std::vector<Rung>& rungs) {
  if (rungs.size() < 2) return;
  auto& g = rungs.back();
  const bool doubling = (g.nodes & (g.nodes - 1)) == 0;
  if (doubling || g.status == Outcome::Pass || g.failure.find("IndivisibleError") == std::string::npos)
    return;
  g.verdict = Outcome::NA;
  g.efficiency_pct.reset();
  g.failure = fmt::format(
      "the config cannot shard over {} nodes (JAX IndivisibleError): the workload's shape, not the hardware; "
      "the ladder ends at {} nodes ({})",
      g.nodes, rungs[rungs.size() - 2].nodes, g.failure);
}

void ScaleTier::run(Certification& c, TierRecord& t) const {
  const auto nodes = c.healthy_nodes();
  const auto rungs = ladder(nodes.size());
  t.ran = user_filter(c.o)
              ? "each rung's training; at full scale the stages the --gtest_filter keeps"
              : "each rung's training; at full scale the setup, RDMA check, the sweeps' training "
                "and gates (no smoke: every sweep's first steps are one)";
  for (std::size_t i = 0; i < rungs.size() && !c.runner.interrupted(); ++i)
    t.rungs.push_back(run_rung(c, nodes, rungs[i], i + 1 == rungs.size(), t.dir));
  score_ladder(t.rungs, c.o.per_doubling_pct / 100);
  set_aside_unshardable(t.rungs);
  Outcome worst = Outcome::Pass;
  std::string named, words;
  for (const auto& g : t.rungs) {
    t.node_minutes += g.seconds * static_cast<double>(g.nodes) / 60;
    t.node_steps += g.steps;
    t.phases.add(g.phases, static_cast<double>(g.nodes));
    words += (words.empty() ? "" : "; ") + rung_words(g);
    if (g.verdict == Outcome::Fail && g.efficiency_pct && named.empty()) named = std::to_string(g.nodes);
    worst = worst_of(worst, g.verdict);  // the one order (catalog/outcome.hpp)
  }
  const bool full_failed =
      !t.rungs.empty() && t.rungs.back().status == Outcome::Fail && t.rungs.back().verdict != Outcome::NA;
  if (full_failed) worst = worst_of(worst, Outcome::Fail);
  t.outcome = worst;
  t.summary = (named.empty() ? "" : "efficiency falls below the bound at " + named + " nodes; ") + words;
  if (full_failed) t.summary += "; the full-scale run's own gates failed: " + t.rungs.back().failure;
}

void reset(TierRecord& t) {
  t.state = TierState::Pending;
  t.why_not_run.clear();
  t.excluded.clear();
  t.reruns.clear();
  t.ran.clear();
  t.rungs.clear();
  t.node_minutes = 0;
  t.node_steps = 0;
  t.phases = {};
}

void run_tier(Certification& c, const Tier& tier, TierRecord& t) {
  reset(t);
  t.nodes_in = c.cert().healthy();
  t.dir = c.tier_dir(t.kind).string();
  fs::create_directories(t.dir);
  t.started_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  t.budget_minutes = c.o.budget_minutes;  // this part's budget: a resumed one may have another
  const auto t0 = Clock::now();
  spdlog::info("certify: {} tier on {} node(s), in {}", to_string(t.kind), t.nodes_in.size(), t.dir);
  tier.run(c, t);
  t.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  t.ended_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  if (c.runner.interrupted()) {  // runs cut short say nothing of a node
    t.state = TierState::NotRun;
    t.why_not_run = "interrupted (Ctrl-C) during this tier: its runs in " + t.dir +
                    " are not counted; cvs certify --resume " + c.o.output.string() + " runs it again";
    t.excluded.clear();
    return;
  }
  t.state = TierState::Decided;
  spdlog::info("certify: {} tier {}: {}", to_string(t.kind), to_string(t.outcome, "?"), t.summary);
  if (const auto w = t.phases.words(); !w.empty())
    spdlog::info("certify: {} tier's {:.1f} node-minute(s): {}", to_string(t.kind), t.node_minutes, w);
}

// "" when the tier fits what is left of the budget, else why not (and no tier after it starts).
// The budget holds a tier against one run's time as this certification measured it (a resumed
// one's kept nodes tier too).
std::string budget_stop(const Certification& c, const Tier& tier) {
  const auto& cert = c.in.certificate;
  const double need_min = tier.runs_needed(c.o, c.in, cert.healthy().size()) * run_estimate_s(cert) / 60;
  return over_budget(need_min, c.o.budget_minutes, c.elapsed_min());
}

}  // namespace

double Tier::runs_needed(const Options& o, const Inputs& in, std::size_t healthy) const {
  if (runs_first()) return 0;
  std::size_t rounds = 0;
  for (const auto& g : tier_runs(kind(), o, in, healthy))
    if (g.certain) rounds += rounds_of(g, o.max_parallel);
  return static_cast<double>(rounds);
}

const Tier& tier_of(TierKind k) {
  static const PreflightTier preflight;
  static const NodesTier nodes;
  static const LinksTier links;
  static const ScaleTier scale;
  switch (k) {
    case TierKind::Preflight:
      return preflight;
    case TierKind::Nodes:
      return nodes;
    case TierKind::Links:
      return links;
    case TierKind::Scale:
      return scale;
  }
  throw std::logic_error("no tier of this kind");
}

int run(const Options& o, Inputs& in, SuiteRunner& runner) {
  Certification c{o, in, runner};
  auto& cert = in.certificate;
  certify::Allocation alloc(in.cluster, "certify");
  if (auto why = alloc.acquire(); !why.empty()) {
    cert.verdict = Verdict::Error;
    cert.verdict_reason = "no Slurm allocation: " + why;
    c.save();
    return exit_code(cert);
  }
  if (cert.inputs.hosts.empty())
    for (const auto& n : in.cluster.nodes) cert.inputs.hosts.push_back(n.name);
  const std::string resume = "interrupted (Ctrl-C): cvs certify --resume " + o.output.string();
  std::string stop;
  for (auto& t : cert.tiers) {
    if (t.state == TierState::Decided) {
      spdlog::info("certify: {} tier already decided ({}): kept", to_string(t.kind),
                   to_string(t.outcome, "?"));
      continue;
    }
    if (stop.empty() && runner.interrupted()) stop = resume;
    const Tier& tier = tier_of(t.kind);
    if (stop.empty()) stop = budget_stop(c, tier);
    if (const auto why = stop.empty() ? tier.cannot_start(cert.healthy().size()) : stop; !why.empty()) {
      t.state = TierState::NotRun;
      t.why_not_run = why;
      c.save();
      continue;
    }
    run_tier(c, tier, t);
    if (t.state != TierState::Decided) stop = resume;
    c.save();
  }
  runner.end_warm_scope({in.single_config, in.distributed_config});
  alloc.release();
  cert.ended_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  decide(cert);
  if (o.drain && in.cluster.is_slurm() && cert.verdict != Verdict::Error)
    for (const auto& e : cert.excluded)
      cert.drain_commands.push_back(runner.drain(certify::node_named(in.cluster, e.node), e.evidence));
  c.save();
  return exit_code(cert);
}

}  // namespace cvs::certify
