// cvs certify's tiers (lib/cvs/certify/tiers.hpp) driven whole through their runner seam: the
// SuiteRunner is a simulated cluster here (the one double of this file: no suite process runs in a
// unit test; tests/e2e/certify_test.sh runs the real ones). What each tier decides, on which
// nodes, what it runs again, what the budget and Ctrl-C hold back, and what certificate.json says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "cvs/catalog/stage_names.hpp"
#include "cvs/certify/tier_runs.hpp"
#include "cvs/certify/tiers.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using cvs::FigureKey;
using cvs::FleetNode;
using cvs::Outcome;
using cvs::TierKind;
using cvs::TierState;
using cvs::certify::Inputs;
using cvs::certify::Options;

namespace {

const std::string kSweep = "BS=2,PRECISION=BF16,SL=128";

// A simulated cluster behind the seam. Each node trains at its tok/s per GPU; a node in setup_fails
// errors in its setup run; a node's first slow_runs[node] training runs are at a third of its speed;
// a run of k nodes keeps `scaling` per doubling; pairs take 60 ms a step, a slow link 160. It
// records every call, and says "interrupted" once interrupt_in names the folder a run is in.
struct SimulatedCluster final : cvs::certify::SuiteRunner {
  std::map<std::string, double> tok_s;
  std::set<std::string> setup_fails;
  std::map<std::string, int> slow_runs;
  std::set<std::pair<std::string, std::string>> slow_links;
  std::set<std::string> slow_nics;  // every pair with this node is slow (its own link)
  double scaling = 0.97;
  std::set<std::size_t> rung_without_interval_once;  // its first run has too few steady steps
  std::map<std::size_t, std::string> rung_fails;     // a rung's run fails its own gates, no figure
  std::string interrupt_in;                          // a folder name: Ctrl-C arrives in its runs
  std::set<std::string> checkpoint_fails;            // its checkpoint save and resume fails
  bool stopped = false;
  std::map<std::string, std::size_t> runs;   // the suite runs made, by the folder of the call
  std::vector<std::string> calls;            // "<folder>: a b c" per call
  std::vector<std::string> filters;          // each call's --gtest_filter ("" none)
  std::vector<std::string> scopes;           // each call's --warm-scope ("" none)
  std::vector<std::filesystem::path> ended;  // end_warm_scope's configs
  std::size_t calls_when_ended = 0;
  std::vector<std::filesystem::path> awaited;  // await_warm_scope's configs
  std::size_t calls_when_awaited = 0, times_awaited = 0;

  FleetNode training(const std::string& name, double v) const {
    FleetNode n;
    n.name = name;
    n.status = Outcome::Pass;
    const FigureKey tok{kSweep, "tokens_per_sec_per_gpu"};
    n.figures[tok] = n.steady[tok] = v;
    n.figures[{kSweep, "step_time_p50_ms"}] = 256000.0 / v;
    n.intervals[tok] = {0.99 * v, 1.01 * v};
    n.seconds = 60;
    n.steps = 100;
    n.phases.startup_s = 25;  // a run's phases as its logs would give them (other: none)
    n.phases.compile_s = 5;
    n.phases.training_s = 25;
    n.phases.teardown_s = 5;
    n.phases.runs = 1;
    return n;
  }
  static std::string filter_in(const cvs::certify::NodeRuns& spec) {
    for (const auto& a : spec.args)
      if (a.rfind("--gtest_filter=", 0) == 0) return a.substr(15);
    return "";
  }
  std::string warm_scope() const override { return "cert-simulated"; }
  void await_warm_scope(const std::vector<std::filesystem::path>& configs) override {
    awaited = configs;
    calls_when_awaited = calls.size();
    ++times_awaited;
  }
  void end_warm_scope(const std::vector<std::filesystem::path>& configs) override {
    ended = configs;
    calls_when_ended = calls.size();
  }
  void note(const cvs::certify::NodeRuns& spec, const std::vector<std::string>& names) {
    std::string line = spec.root.filename().string() + ":";
    for (const auto& n : names) line += " " + n;
    calls.push_back(line);
    filters.push_back(filter_in(spec));
    const auto w = std::find(spec.args.begin(), spec.args.end(), "--warm-scope");
    scopes.push_back(w != spec.args.end() && w + 1 != spec.args.end() ? *(w + 1) : "");
    if (!interrupt_in.empty() && spec.root.filename() == interrupt_in) stopped = true;
  }
  std::vector<FleetNode> each(const cvs::certify::NodeRuns& spec,
                              const std::vector<cvs::Node>& nodes) override {
    std::vector<std::string> names;
    for (const auto& n : nodes) names.push_back(n.name);
    note(spec, names);
    namespace st = cvs::stage_names;
    const auto filter = filter_in(spec);
    const bool setup =
        filter == st::filter_of({st::kSetup}) || filter == st::filter_of({st::kSetup, st::kSetupRdma});
    const bool checkpoint = filter.find(st::kCheckpoint) != std::string::npos;
    runs[spec.root.filename().string()] += names.size();
    std::vector<FleetNode> out;
    for (const auto& name : names) {
      if (checkpoint) {
        FleetNode n;
        n.name = name;
        n.status = checkpoint_fails.count(name) ? Outcome::Fail : Outcome::Pass;
        n.failure =
            checkpoint_fails.count(name) ? "checkpoint_resume.save_and_resume: no checkpoint was saved" : "";
        n.seconds = 30;
        n.phases.startup_s = 10;
        n.phases.checkpoint_s = 10;
        n.phases.training_s = 10;
        n.phases.runs = 2;
        out.push_back(n);
        continue;
      }
      if (setup) {
        FleetNode n;
        n.name = name;
        n.status = setup_fails.count(name) ? Outcome::Error : Outcome::Pass;
        n.failure = setup_fails.count(name) ? "test_setup: the container did not start" : "";
        n.seconds = 5;
        out.push_back(n);
        continue;
      }
      const bool slow = slow_runs[name] > 0;
      if (slow) --slow_runs[name];
      out.push_back(training(name, tok_s.at(name) / (slow ? 3 : 1)));
    }
    return out;
  }
  FleetNode together(const cvs::certify::NodeRuns& spec, const std::vector<cvs::Node>& nodes,
                     const std::string&, const std::string& label) override {
    std::vector<std::string> names;
    double slowest = 1e300;
    for (const auto& n : nodes) {
      names.push_back(n.name);
      slowest = std::min(slowest, tok_s.at(n.name));
    }
    note(spec, names);
    ++runs[spec.root.filename().string()];
    calls.back() += " config=" + spec.config.filename().string();
    if (auto f = rung_fails.find(nodes.size()); f != rung_fails.end()) {
      FleetNode n;
      n.name = label;
      n.status = Outcome::Fail;
      n.failure = f->second;
      n.seconds = 20;
      return n;
    }
    auto n = training(label, slowest * std::pow(scaling, std::log2(static_cast<double>(nodes.size()))));
    if (rung_without_interval_once.erase(nodes.size())) n.intervals.clear();
    return n;
  }
  cvs::PairsResult pairs(const cvs::certify::NodeRuns& spec, const std::vector<std::string>& healthy,
                         double min_deviation) override {
    note(spec, healthy);
    return cvs::localise_links(
        healthy,
        [this, folder = spec.root.filename().string()](std::vector<cvs::PairRun>& batch) {
          runs[folder] += batch.size();
          for (auto& p : batch) {
            p.status = Outcome::Pass;
            p.sweep = kSweep;
            const bool slow = slow_links.count({p.a, p.b}) || slow_links.count({p.b, p.a}) ||
                              slow_nics.count(p.a) || slow_nics.count(p.b);
            p.step_ms = slow ? 160 : 60;
            p.seconds = 30;
            p.steps = 200;
          }
        },
        min_deviation);
  }
  std::string drain(const cvs::Node& node, const std::string& reason) override {
    calls.push_back("drain: " + node.name + " " + reason);
    return "scontrol update NodeName=" + node.host;
  }
  bool interrupted() const override { return stopped; }
};

// Local nodes a, b, ... (four unless said), their speeds a few per mille apart, a certification with
// the given tiers in a fresh folder of its own.
struct Certification {
  fs::path dir;
  Options o;
  Inputs in;
  SimulatedCluster sim;

  Certification(std::vector<TierKind> kinds, const std::string& name, int nodes = 4) {
    dir = fs::temp_directory_path() / ("cvs_certify_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "inputs");
    o.output = dir;
    for (int i = 0; i < nodes; ++i) {
      cvs::Node node;
      node.name = std::string(1, static_cast<char>('a' + i));
      in.cluster.nodes.push_back(node);
      sim.tok_s[node.name] = 1000 + 3 * i;
    }
    in.single_config = dir / "inputs" / "single_config.json";
    in.distributed_config = dir / "inputs" / "distributed_config.json";
    cvs::certify::write_json(in.distributed_config, {{"train_params", {{"maxtext_config", {{"steps", 100}}}}},
                                                     {"sweeps", {{kSweep, {{"steps", 100}}}}}});
    in.first_sweep = kSweep;
    in.distributed_steps = 100;
    for (auto k : kinds) {
      cvs::TierRecord t;
      t.kind = k;
      in.certificate.tiers.push_back(t);
    }
  }
  ~Certification() { fs::remove_all(dir); }
  int run() { return cvs::certify::run(o, in, sim); }
  const cvs::TierRecord& tier(TierKind k) { return *in.certificate.tier(k); }
  // What --resume would read: certificate.json as written.
  cvs::Certificate written() const {
    return cvs::certificate_from_json(cvs::test::read_json(dir / "certificate.json"), "certificate.json");
  }
};

std::vector<std::string> excluded(const cvs::TierRecord& t) {
  std::vector<std::string> v;
  for (const auto& e : t.excluded) v.push_back(e.node);
  return v;
}

const std::vector<TierKind> kAll = {TierKind::Preflight, TierKind::Nodes, TierKind::Links, TierKind::Scale};

}  // namespace

TEST(CertifyTiers, AHealthyClusterIsCertifiedTierByTierOnEveryNode) {
  Certification c(kAll, "healthy");
  EXPECT_EQ(c.run(), 0);
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::Certified) << c.in.certificate.verdict_reason;
  EXPECT_EQ(c.sim.calls,
            (std::vector<std::string>{"setup: a b c d", "rdma: a b c d", "nodes: a b c d", "links: a b c d",
                                      "1-nodes: a config=distributed_config.json",
                                      "2-nodes: a b config=distributed_config.json",
                                      "4-nodes: a b c d config=distributed_config.json"}));
  for (const auto& t : c.in.certificate.tiers) {
    EXPECT_EQ(t.state, TierState::Decided) << to_string(t.kind);
    EXPECT_EQ(t.outcome, Outcome::Pass) << to_string(t.kind) << ": " << t.summary;
  }
  EXPECT_EQ(c.in.certificate.inputs.hosts, (std::vector<std::string>{"a", "b", "c", "d"}));
  // The ladder's rungs train; the full-scale run has its gates but no smoke and no checkpoint.
  namespace st = cvs::stage_names;
  EXPECT_EQ(c.sim.filters[4], st::filter_of({st::kSetup, st::kTrainingRun}));
  EXPECT_EQ(c.sim.filters.back(), st::filter_of({st::kSetup, st::kSetupRdma, st::kTrainingRun, st::kMetric}));
  EXPECT_NE(c.tier(TierKind::Scale).ran.find("(no smoke"), std::string::npos) << c.tier(TierKind::Scale).ran;
  // One warm-trainer scope for every run of every tier, ended once after the last, for both configs.
  EXPECT_EQ(c.sim.scopes, std::vector<std::string>(c.sim.calls.size(), "cert-simulated"));
  EXPECT_EQ(c.sim.calls_when_ended, c.sim.calls.size());
  EXPECT_EQ(c.sim.ended, (std::vector<std::filesystem::path>{c.in.single_config, c.in.distributed_config}));
  // The trainers the preflight started serve before the nodes tier's first training: once, after
  // the setup and RDMA runs, for both configs.
  EXPECT_EQ(c.sim.times_awaited, 1u);
  EXPECT_EQ(c.sim.calls_when_awaited, 2u);
  EXPECT_EQ(c.sim.awaited, c.sim.ended);
  const auto& scale = c.tier(TierKind::Scale);
  ASSERT_EQ(scale.rungs.size(), 3u);
  EXPECT_NEAR(*scale.rungs[2].efficiency_pct, 100 * 0.97 * 0.97, 0.01);
  EXPECT_EQ(c.written().verdict, cvs::Verdict::Certified) << "certificate.json is the state returned";
}

// Preflight's failed setup excludes a node before any training, and the later tiers never run on it.
TEST(CertifyTiers, ANodeWhoseSetupFailsIsExcludedAtPreflightAndRunsNothingElse) {
  Certification c({TierKind::Preflight, TierKind::Nodes}, "setup");
  c.in.distributed_config.clear();  // a single-node certification: no RDMA check
  c.sim.setup_fails = {"c"};
  EXPECT_EQ(c.run(), 1);
  EXPECT_EQ(excluded(c.tier(TierKind::Preflight)), std::vector<std::string>{"c"});
  EXPECT_NE(c.tier(TierKind::Preflight).excluded[0].evidence.find("the container did not start"),
            std::string::npos)
      << c.tier(TierKind::Preflight).excluded[0].evidence;
  EXPECT_EQ(c.sim.calls, (std::vector<std::string>{"setup: a b c d", "nodes: a b d"}));
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::NotCertified);
  EXPECT_EQ(c.in.certificate.certified, (std::vector<std::string>{"a", "b", "d"}));
}

// The nodes tier's question is speed: every node runs the setup and the sweeps' training and speed
// gates (no smoke, no checkpoint, no loss gate: a run may stop at a look on speed alone); the checkpoint save
// and resume runs once, on the first healthy node. The tier's node-minutes by phase add up its runs', in
// certificate.json too.
TEST(CertifyTiers, TheNodesTierRunsTheSpeedStagesOnEveryNodeAndTheCheckpointOnceOnOne) {
  namespace st = cvs::stage_names;
  Certification c({TierKind::Preflight, TierKind::Nodes}, "ckonce");
  c.in.distributed_config.clear();
  c.in.checkpoint_resume = true;
  EXPECT_EQ(c.run(), 0) << c.in.certificate.verdict_reason;
  EXPECT_EQ(c.sim.calls, (std::vector<std::string>{"setup: a b c d", "nodes: a b c d", "checkpoint: a"}));
  EXPECT_EQ(c.sim.filters[1], st::filter_of({st::kSetup, st::kTrainingRun}) + ":" + st::speed_metric_tests());
  EXPECT_EQ(c.sim.filters[2], st::filter_of({st::kSetup, st::kCheckpoint}));
  const auto& nodes = c.tier(TierKind::Nodes);
  EXPECT_NE(nodes.ran.find("the checkpoint save and resume once, on a (PASS)"), std::string::npos)
      << nodes.ran;
  EXPECT_EQ(nodes.phases.runs, 4 + 2);
  EXPECT_DOUBLE_EQ(nodes.phases.training_s, 4 * 25 + 10);
  EXPECT_DOUBLE_EQ(nodes.phases.checkpoint_s, 10);
  EXPECT_DOUBLE_EQ(nodes.node_minutes, (4 * 60 + 30) / 60.0);
  EXPECT_NEAR(nodes.phases.training_share(), 110.0 / 270, 1e-9);
  const auto kept = *c.written().tier(TierKind::Nodes);
  EXPECT_NEAR(kept.phases.training_s, nodes.phases.training_s, 0.06) << "kept in node-minutes to 3 places";
  EXPECT_EQ(kept.phases.runs, 6);
  EXPECT_EQ(kept.ran, nodes.ran);
}

TEST(CertifyTiers, AFailedCheckpointExcludesItsNodeInItsWords) {
  Certification c({TierKind::Preflight, TierKind::Nodes}, "ckfail");
  c.in.distributed_config.clear();
  c.in.checkpoint_resume = true;
  c.sim.checkpoint_fails = {"a"};
  EXPECT_EQ(c.run(), 1);
  const auto& nodes = c.tier(TierKind::Nodes);
  EXPECT_EQ(excluded(nodes), std::vector<std::string>{"a"});
  EXPECT_NE(
      nodes.excluded[0].evidence.find("checkpoint save and resume: checkpoint_resume.save_and_resume: no "
                                      "checkpoint was saved"),
      std::string::npos)
      << nodes.excluded[0].evidence;
  EXPECT_EQ(c.in.certificate.certified, (std::vector<std::string>{"b", "c", "d"}));
}

TEST(CertifyTiers, AUsersFilterKeepsItsStagesOnEveryNodeAndNoCheckpointRunOfItsOwn) {
  Certification c({TierKind::Preflight, TierKind::Nodes}, "ckfilter");
  c.in.distributed_config.clear();
  c.in.checkpoint_resume = true;
  c.o.suite_args = {"--gtest_filter=test_setup.*:sweep/test_training_run.*"};
  EXPECT_EQ(c.run(), 0);
  EXPECT_EQ(c.sim.calls, (std::vector<std::string>{"setup: a b c d", "nodes: a b c d"}));
  EXPECT_EQ(c.sim.filters[1], "test_setup.*:sweep/test_training_run.*");
  EXPECT_EQ(c.tier(TierKind::Nodes).ran, "the stages the --gtest_filter keeps, on every node");
}

// At full scale too the user's filter says which stages run (the rungs below it train).
TEST(CertifyTiers, AUsersFilterSaysTheFullScaleRunsStages) {
  Certification c(kAll, "scalefilter");
  c.o.suite_args = {"--gtest_filter=test_setup.*:test_smoke.*"};
  EXPECT_EQ(c.run(), 0) << c.in.certificate.verdict_reason;
  EXPECT_EQ(c.sim.filters.back(), "test_setup.*:test_smoke.*");
  EXPECT_EQ(c.tier(TierKind::Scale).ran,
            "each rung's training; at full scale the stages the --gtest_filter keeps");
}

// A node slow on speed alone runs once more: slow again, it is excluded with both runs' word; a
// burst that passed (slow once) costs it nothing.
TEST(CertifyTiers, ASlowNodeRunsOnceMoreAndIsExcludedOnlyWhenSlowAgain) {
  Certification c({TierKind::Preflight, TierKind::Nodes}, "slow", 6);
  c.sim.slow_runs = {{"b", 2}, {"d", 1}};
  EXPECT_EQ(c.run(), 1);
  const auto& nodes = c.tier(TierKind::Nodes);
  EXPECT_EQ(c.sim.calls.back(), "rerun: b d");
  EXPECT_EQ(nodes.reruns, (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(excluded(nodes), std::vector<std::string>{"b"});
  EXPECT_NE(nodes.excluded[0].evidence.find("(slow again when run once more)"), std::string::npos)
      << nodes.excluded[0].evidence;
  EXPECT_NE(nodes.summary.find("5 of 6 node(s) healthy; 2 run once more"), std::string::npos)
      << nodes.summary;
  EXPECT_DOUBLE_EQ(nodes.node_minutes, 8.0) << "eight runs of a minute: six, then two again";
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::NotCertified);
}

// Links: two nodes slow only together are a slow link (no node to blame): the tier fails and the
// certificate is not given.
TEST(CertifyTiers, ASlowLinkFailsTheLinksTierWithoutExcludingANode) {
  Certification c({TierKind::Preflight, TierKind::Nodes, TierKind::Links}, "link", 6);
  c.sim.slow_links = {{"e", "f"}};
  EXPECT_EQ(c.run(), 1);
  const auto& links = c.tier(TierKind::Links);
  EXPECT_EQ(links.outcome, Outcome::Fail) << links.summary;
  EXPECT_TRUE(links.excluded.empty());
  EXPECT_NE(links.summary.find("slow link(s): e <-> f"), std::string::npos) << links.summary;
  EXPECT_TRUE(fs::exists(fs::path(links.dir) / "pairs.json"));
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::NotCertified);
}

// Links: a node slow with every partner (its own link) is excluded by the links tier with the
// pairs' evidence; the others stay certified (--min-nodes), and scale runs without it.
TEST(CertifyTiers, ANodeSlowWithEveryPartnerIsExcludedByTheLinksTier) {
  Certification c(kAll, "nic", 6);
  c.sim.slow_nics = {"d"};
  c.o.min_nodes = 4;
  c.in.certificate.inputs.min_nodes = 4;
  EXPECT_EQ(c.run(), 0) << c.in.certificate.verdict_reason;
  const auto& links = c.tier(TierKind::Links);
  EXPECT_EQ(excluded(links), std::vector<std::string>{"d"});
  EXPECT_NE(links.excluded[0].evidence.find("every two-node run with it was slow"), std::string::npos)
      << links.excluded[0].evidence;
  EXPECT_EQ(c.tier(TierKind::Scale).nodes_in, (std::vector<std::string>{"a", "b", "c", "e", "f"}));
  EXPECT_EQ(c.in.certificate.certified, (std::vector<std::string>{"a", "b", "c", "e", "f"}));
}

// A rung without a steady-state interval runs again with twice the steps (a config written once
// into inputs/), as a speed gate extends.
TEST(CertifyTiers, ARungWithoutAnIntervalRunsAgainWithTwiceTheSteps) {
  Certification c({TierKind::Preflight, TierKind::Nodes, TierKind::Scale}, "rung");
  c.sim.rung_without_interval_once = {2};
  EXPECT_EQ(c.run(), 0) << c.in.certificate.verdict_reason;
  const auto twice = c.dir / "inputs" / "distributed_config_200_steps.json";
  EXPECT_NE(
      std::find(c.sim.calls.begin(), c.sim.calls.end(), "steps-200: a b config=" + twice.filename().string()),
      c.sim.calls.end());
  const auto j = cvs::test::read_json(twice);
  EXPECT_EQ(j["train_params"]["maxtext_config"]["steps"], 200);
  EXPECT_EQ(j["sweeps"][kSweep]["steps"], 200);
  const auto& rung = c.tier(TierKind::Scale).rungs.at(1);
  EXPECT_TRUE(rung.interval.has_value());
  EXPECT_EQ(rung.steps, 2 * (100 + 100)) << "both runs of two nodes counted";
}

// A full-scale rung that fails its own gates with no figure (a config that cannot shard over that
// many nodes, say) fails the tier with the run's words, and does not call it an efficiency.
TEST(CertifyTiers, AFullScaleRunThatFailsItsGatesFailsTheTierInItsOwnWords) {
  Certification c({TierKind::Preflight, TierKind::Nodes, TierKind::Scale}, "fullscale", 3);
  c.sim.rung_fails = {{3, "sweep/test_metric: training.loss_final 9.1 above 8"}};
  EXPECT_EQ(c.run(), 1);
  const auto& scale = c.tier(TierKind::Scale);
  EXPECT_EQ(scale.outcome, Outcome::Fail);
  EXPECT_EQ(scale.summary.find("efficiency falls below"), std::string::npos) << scale.summary;
  EXPECT_NE(scale.summary.find(
                "the full-scale run's own gates failed: sweep/test_metric: training.loss_final 9.1 above 8"),
            std::string::npos)
      << scale.summary;
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::NotCertified);
}

// Three healthy nodes and a config whose FSDP cannot shard over three processes (the certify e2e saw
// it: JAX IndivisibleError): the 3-node rung is N/A in words that say why, not a hardware FAIL; the
// doublings decide the tier. A doubling rung that cannot shard still fails (the config is wrong).
TEST(CertifyTiers, AFullScaleRungTheConfigCannotShardIsSetAsideNotFailed) {
  Certification c({TierKind::Preflight, TierKind::Nodes, TierKind::Scale}, "unshardable", 3);
  c.sim.rung_fails = {
      {3, "sweep/test_training_run: jax._src.sharding.IndivisibleError tiling factors (3, 1, 1)"}};
  EXPECT_EQ(c.run(), 0);
  const auto& scale = c.tier(TierKind::Scale);
  ASSERT_EQ(scale.rungs.size(), 3u);
  EXPECT_EQ(scale.rungs[1].verdict, Outcome::Pass);
  EXPECT_EQ(scale.rungs[2].verdict, Outcome::NA);
  EXPECT_EQ(scale.outcome, Outcome::Pass);
  EXPECT_NE(
      scale.summary.find("3 node(s): N/A (the config cannot shard over 3 nodes (JAX IndivisibleError): the "
                         "workload's shape, not the hardware; the ladder ends at 2 nodes"),
      std::string::npos)
      << scale.summary;
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::Certified);

  Certification four({TierKind::Preflight, TierKind::Nodes, TierKind::Scale}, "unshardable4", 4);
  four.sim.rung_fails = {{4, "sweep/test_training_run: jax._src.sharding.IndivisibleError"}};
  EXPECT_EQ(four.run(), 1);
  EXPECT_EQ(four.tier(TierKind::Scale).outcome, Outcome::Fail);
}

// --resume with --budget-minutes: the kept nodes tier's measured run time holds links (one round of
// pairs: its certain runs, certify/tier_runs.hpp; two rounds until the budget and the plan shared
// that definition, so the budget here was 3 and the need 4.0) back when they do not fit, and every
// tier after it; the certificate is incomplete, not given.
TEST(CertifyTiers, AResumedCertificationHoldsLaterTiersAgainstItsKeptNodesTiersRunTime) {
  Certification c(kAll, "budget");
  c.in.certificate.inputs.hosts = {"a", "b", "c", "d"};
  for (auto k : {TierKind::Preflight, TierKind::Nodes}) {
    auto& t = *c.in.certificate.tier(k);
    t.state = TierState::Decided;
    t.outcome = Outcome::Pass;
  }
  c.in.certificate.tier(TierKind::Nodes)->run_seconds = 120;
  c.in.certificate = cvs::certificate_from_json(cvs::to_json(c.in.certificate), "certificate.json");
  c.o.budget_minutes = 1.5;
  EXPECT_EQ(c.run(), 1);
  EXPECT_EQ(c.sim.calls, std::vector<std::string>{}) << "nothing ran";
  const auto& links = c.tier(TierKind::Links);
  EXPECT_EQ(links.state, TierState::NotRun);
  EXPECT_NE(links.why_not_run.find("budget: about 2.0 min needed"), std::string::npos) << links.why_not_run;
  EXPECT_EQ(c.tier(TierKind::Scale).why_not_run, links.why_not_run) << "the budget holds every tier after";
  EXPECT_EQ(c.in.certificate.verdict, cvs::Verdict::Incomplete);
  // With room for both (2 + 6 min), they run.
  c.o.budget_minutes = 11;
  EXPECT_EQ(c.run(), 0) << c.in.certificate.verdict_reason;
  EXPECT_EQ(c.sim.calls.front(), "links: a b c d");
}

// Ctrl-C during a tier: its runs say nothing of a node, it and every tier after are not run, and
// the certificate names --resume.
TEST(CertifyTiers, CtrlCLeavesTheTierInFlightUndecidedForResume) {
  Certification c(kAll, "interrupt");
  c.sim.interrupt_in = "nodes";
  c.sim.slow_runs = {{"a", 1}};
  EXPECT_EQ(c.run(), 1);
  const auto& nodes = c.tier(TierKind::Nodes);
  EXPECT_EQ(nodes.state, TierState::NotRun);
  EXPECT_TRUE(nodes.excluded.empty()) << "a run cut short accuses no node";
  EXPECT_NE(nodes.why_not_run.find("cvs certify --resume " + c.dir.string()), std::string::npos)
      << nodes.why_not_run;
  EXPECT_EQ(c.tier(TierKind::Links).state, TierState::NotRun);
  EXPECT_EQ(c.sim.calls.back(), "nodes: a b c d") << "no rerun after Ctrl-C";
  EXPECT_EQ(c.written().tier(TierKind::Preflight)->state, TierState::Decided);
}

TEST(CertifyTiers, EachTierSaysWhatItNeedsAndWhenItCannotStart) {
  using cvs::certify::tier_of;
  Certification c(kAll, "needs");
  // Its certain runs' rounds (certify/tier_runs.hpp). Links: one round of pairs (it said two until
  // the plan and the tiers shared one definition: a second runs only for a slow pair).
  EXPECT_DOUBLE_EQ(tier_of(TierKind::Links).runs_needed(c.o, c.in, 4), 1) << "one round of pairs";
  c.o.max_parallel = 1;
  EXPECT_DOUBLE_EQ(tier_of(TierKind::Links).runs_needed(c.o, c.in, 4), 2) << "two pairs, one at a time";
  EXPECT_DOUBLE_EQ(tier_of(TierKind::Scale).runs_needed(c.o, c.in, 4), 3) << "rungs 1, 2, 4";
  EXPECT_DOUBLE_EQ(tier_of(TierKind::Nodes).runs_needed(c.o, c.in, 4), 0) << "it runs before a run is timed";
  EXPECT_EQ(tier_of(TierKind::Links).cannot_start(1), "fewer than two healthy nodes: no pair");
  EXPECT_EQ(tier_of(TierKind::Scale).cannot_start(1), "");
  EXPECT_EQ(tier_of(TierKind::Nodes).cannot_start(0), "no healthy node left");
  for (auto k : kAll) EXPECT_EQ(tier_of(k).kind(), k);
}

// The runs each tier makes are the runs certify/tier_runs.hpp defines, which --plan costs and the
// budget counts: on a healthy cluster exactly its certain runs; with reruns called for, those more,
// never past the bound (the plan's "at most").
TEST(CertifyTiers, EachTierMakesTheRunsThePlanCounts) {
  const auto certain = [](const Certification& c, TierKind k, bool all = false) {
    std::size_t n = 0;
    for (const auto& g : cvs::certify::tier_runs(k, c.o, c.in, c.in.cluster.nodes.size()))
      if (g.certain || all) n += g.runs;
    return n;
  };
  const auto made = [](const Certification& c, std::initializer_list<const char*> folders) {
    std::size_t n = 0;
    for (const auto* f : folders)
      if (auto it = c.sim.runs.find(f); it != c.sim.runs.end()) n += it->second;
    return n;
  };
  for (int nodes : {4, 5}) {
    Certification c(kAll, "plan_runs_" + std::to_string(nodes), nodes);
    c.in.checkpoint_resume = true;
    c.in.single_steps = {100};
    ASSERT_EQ(c.run(), 0) << nodes;
    EXPECT_EQ(made(c, {"setup", "rdma"}), certain(c, TierKind::Preflight)) << nodes;
    EXPECT_EQ(made(c, {"nodes", "checkpoint"}), certain(c, TierKind::Nodes)) << nodes;
    EXPECT_EQ(made(c, {"links"}), certain(c, TierKind::Links))
        << nodes << " (an odd node pairs with the first)";
    EXPECT_EQ(made(c, {"1-nodes", "2-nodes", "4-nodes", "5-nodes"}), certain(c, TierKind::Scale)) << nodes;
  }
  Certification c(kAll, "plan_reruns");
  c.sim.slow_links = {{"c", "d"}};
  c.sim.rung_without_interval_once = {2};
  c.sim.slow_runs["b"] = 1;
  c.run();
  EXPECT_EQ(made(c, {"nodes", "rerun"}), certain(c, TierKind::Nodes) + 1) << "b once more";
  EXPECT_LE(made(c, {"nodes", "rerun"}), certain(c, TierKind::Nodes, true));
  // c+d slow, confirmed; c and d each with a known-good node: 2 + 1 + 2 runs
  EXPECT_EQ(made(c, {"links"}), 5u);
  EXPECT_LE(made(c, {"links"}), certain(c, TierKind::Links, true));
  EXPECT_EQ(c.sim.runs["steps-200"], 1u) << "rung 2 once more with 2x its steps";
}

// Healthy nodes measured too far apart for any slowdown of one to stand out (the certify e2e's
// degraded run once: 1048, 1139 and 1775 tok/s on a loaded host, with wide intervals; here narrow
// ones and a wider spread): the nodes tier claims no detection power and says so, rather than
// saying nothing.
TEST(CertifyTiers, NodesTooFarApartGiveNoDetectionPowerAndTheSummarySaysSo) {
  Certification c({TierKind::Preflight, TierKind::Nodes}, "no_power", 3);
  c.in.distributed_config.clear();
  c.sim.tok_s = {{"a", 1000}, {"b", 1100}, {"c", 5000}};
  c.in.certificate.inputs.detect_slowdown_pct = 75;
  c.run();
  const auto& nodes = c.tier(TierKind::Nodes);
  EXPECT_FALSE(nodes.detection_power_pct) << *nodes.detection_power_pct;
  EXPECT_NE(nodes.summary.find("no detection power: the 3 healthy node(s)' tokens/s lie too far apart"),
            std::string::npos)
      << nodes.summary;
  EXPECT_NE(nodes.summary.find("target 75 %: not met"), std::string::npos) << nodes.summary;
}
