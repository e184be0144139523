// cvs certify --plan (lib/cvs/certify/plan.hpp): from the configs' steps and the stated guess, and
// from an earlier certification's tiers' times in a real SQLite history store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "cvs/certify/certificate_entry.hpp"
#include "cvs/certify/plan.hpp"
#include "cvs/history/store.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using cvs::TierKind;
using cvs::TierState;

namespace {

struct Planned {
  cvs::certify::Options o;
  cvs::certify::Inputs in;
  Planned(int hosts, bool distributed) {
    for (int i = 0; i < hosts; ++i) {
      cvs::Node n;
      n.name = std::string(1, static_cast<char>('a' + i));
      in.cluster.nodes.push_back(n);
    }
    in.single_steps = {100, 200};
    in.single_caps = {400, 800};
    in.checkpoint_resume = true;
    in.checkpoint_steps = 12;
    in.gpus_per_node = 8;
    in.distributed_steps = 60;
    std::vector<TierKind> kinds = {TierKind::Preflight, TierKind::Nodes};
    if (distributed) {
      in.distributed_config = "dist.json";
      kinds.insert(kinds.end(), {TierKind::Links, TierKind::Scale});
    }
    for (auto k : kinds) {
      cvs::TierRecord t;
      t.kind = k;
      in.certificate.tiers.push_back(t);
    }
    in.certificate.inputs.config_sha256 = "abc";
  }
};

// A decided certificate of `hosts` hosts whose tier k took seconds[k] and 2 x that in node-minutes.
cvs::Certificate decided(int hosts, const std::vector<double>& seconds, bool all_certified) {
  cvs::Certificate c;
  c.started_at = "2026-12-0" + std::to_string(all_certified ? 1 : 2) + "T00:00:00Z";
  c.ended_at = c.started_at;
  c.inputs.config_file = "single.json";
  c.inputs.config_sha256 = "abc";
  for (int i = 0; i < hosts; ++i) c.inputs.hosts.push_back(std::string(1, static_cast<char>('a' + i)));
  c.certified = c.inputs.hosts;
  if (!all_certified) {
    c.certified.pop_back();
    c.excluded.push_back({c.inputs.hosts.back(), "nodes", "slow"});
  }
  c.verdict = cvs::Verdict::Certified;
  const TierKind kinds[] = {TierKind::Preflight, TierKind::Nodes, TierKind::Links, TierKind::Scale};
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    cvs::TierRecord t;
    t.kind = kinds[i];
    t.state = TierState::Decided;
    t.outcome = cvs::Outcome::Pass;
    t.seconds = seconds[i];
    t.node_minutes = 2 * seconds[i] / 60;
    c.tiers.push_back(t);
  }
  return c;
}

}  // namespace

TEST(CertifyPlan, FromTheConfigsStepsAndTheStatedGuess) {
  Planned p(4, true);
  p.o.max_parallel = 2;
  const cvs::certify::PlanGuess g{100, 0.5};
  const auto plan = cvs::certify::make_plan(p.o, p.in, std::nullopt, g);
  ASSERT_EQ(plan.tiers.size(), 4u);
  EXPECT_NE(plan.basis.find("no earlier certification"), std::string::npos) << plan.basis;
  EXPECT_NE(plan.basis.find("100 s of start-up"), std::string::npos) << plan.basis;
  // preflight: setup (a quarter of a start-up) and the RDMA check, 2 batches of 2 nodes
  EXPECT_DOUBLE_EQ(plan.tiers[0].minutes * 60, 2 * 50.0);
  EXPECT_DOUBLE_EQ(plan.tiers[0].node_minutes * 60, 4 * 50.0);
  // nodes: (100 + 50) + (100 + 100) a node, 2 batches; the checkpoint once: 2 x 100 + 12 x 0.5
  EXPECT_DOUBLE_EQ(plan.tiers[1].minutes * 60, 2 * 350.0 + 206);
  EXPECT_DOUBLE_EQ(plan.tiers[1].node_minutes * 60, 4 * 350.0 + 206);
  EXPECT_NE(plan.tiers[1].runs.find("the checkpoint save and resume once"), std::string::npos);
  // links: one round of 2 pairs, 2 at once (the estimate said two rounds until it and the tier
  // shared certify/tier_runs.hpp: a second runs only for a slow pair); scale: rungs 1, 2, 4
  EXPECT_DOUBLE_EQ(plan.tiers[2].minutes * 60, 130.0);
  EXPECT_DOUBLE_EQ(plan.tiers[2].node_minutes * 60, 2 * 2 * 130.0);
  EXPECT_DOUBLE_EQ(plan.tiers[3].node_minutes * 60, (1 + 2 + 4) * 130.0);
  EXPECT_EQ(plan.tiers[3].runs.rfind("the ladder of 1, 2, 4 node(s); at most ", 0), 0u) << plan.tiers[3].runs;
  // The reruns each may call for, bounded beside the estimate: links, every pair slow (2 + 5 x 2
  // two-node runs, 1 + 5 rounds of 2 at once); scale, each rung twice more with 2x and 4x its steps
  // (100 + 120 x 0.5, 100 + 240 x 0.5 each).
  EXPECT_NE(plan.tiers[2].runs.find(fmt::format("at most ~{:.1f} min, {:.1f} node-min with every rerun",
                                                (130.0 + 5 * 130) / 60, (4 + 20) * 130.0 / 60)),
            std::string::npos)
      << plan.tiers[2].runs;
  EXPECT_NE(plan.tiers[3].runs.find(fmt::format("at most ~{:.1f} min, {:.1f} node-min with every rerun",
                                                3 * (130.0 + 160 + 220) / 60, 7 * (130.0 + 160 + 220) / 60)),
            std::string::npos)
      << plan.tiers[3].runs;
  EXPECT_NEAR(plan.gpu_hours, plan.node_minutes / 60 * 8, 1e-12);
  EXPECT_FALSE(plan.tiers[1].from_history);
  EXPECT_EQ(plan.tiers[1].runs.find("up to"), std::string::npos) << "no target: no cap to reach";
  // A precision target may step each run to its cap: the bound beside the estimate, (100 + 400 x 0.5)
  // + (100 + 800 x 0.5) a node, 2 batches, and the checkpoint.
  p.in.certificate.inputs.detect_slowdown_pct = 15;
  const auto targeted = cvs::certify::make_plan(p.o, p.in, std::nullopt, g);
  EXPECT_DOUBLE_EQ(targeted.tiers[1].node_minutes, plan.tiers[1].node_minutes) << "the estimate stays";
  EXPECT_NE(
      targeted.tiers[1].runs.find(fmt::format("up to ~{:.1f} min, {:.1f} node-min if every run steps to "
                                              "its cap for --detect-slowdown-pct 15",
                                              (2 * 800.0 + 206) / 60, (4 * 800.0 + 206) / 60)),
      std::string::npos)
      << targeted.tiers[1].runs;
  p.in.certificate.inputs.detect_slowdown_pct = 0;

  p.o.budget_minutes = plan.tiers[0].minutes + 1;
  EXPECT_EQ(cvs::certify::make_plan(p.o, p.in, std::nullopt, g).budget,
            "--budget-minutes " + fmt::format("{:g}", p.o.budget_minutes) +
                ": the nodes tier and those after it would not start");
  p.o.suite_args = {"--gtest_filter=test_setup.*"};
  // Under a user's filter the tier still runs a node slow on speed alone once more (NodesTier):
  // the plan says so with its bound (it used to say only the first sentence, leaving the rerun out).
  const auto filtered = cvs::certify::make_plan(p.o, p.in, std::nullopt, g).tiers[1].runs;
  EXPECT_EQ(filtered.rfind("the stages the --gtest_filter keeps, on each node; at most ~", 0), 0u)
      << filtered;
  EXPECT_NE(filtered.find("with every rerun it may call for (each node slow on speed alone once more)"),
            std::string::npos)
      << filtered;
}

TEST(CertifyPlan, FromTheHistorysLastCleanCertificationOfTheConfigAndHostCount) {
  const fs::path dir = fs::temp_directory_path() / ("cvs_plan_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto store = cvs::history::Store::open((dir / "h.sqlite").string());
  store->record(cvs::certify::entry_of_certificate(decided(4, {30, 120, 60}, true), dir / "one"));
  store->record(cvs::certify::entry_of_certificate(decided(4, {300, 1200, 600, 900}, false), dir / "two"));
  store->record(cvs::certify::entry_of_certificate(decided(3, {1, 1, 1, 1}, true), dir / "three"));
  EXPECT_FALSE(store->certification_times("abc", 5)) << "no certification of 5 hosts";
  EXPECT_FALSE(store->certification_times("other", 4));
  const auto t = store->certification_times("abc", 4);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->started_at, "2026-12-01T00:00:00Z") << "the clean one, though older";
  EXPECT_DOUBLE_EQ(t->tiers.at("nodes").at("seconds"), 120);

  Planned p(4, true);
  const auto plan = cvs::certify::make_plan(p.o, p.in, t, {});
  EXPECT_NE(plan.basis.find("in the history's certification " + t->id), std::string::npos) << plan.basis;
  EXPECT_TRUE(plan.tiers[1].from_history);
  EXPECT_DOUBLE_EQ(plan.tiers[1].minutes, 2);
  EXPECT_DOUBLE_EQ(plan.tiers[1].node_minutes, 4);
  EXPECT_FALSE(plan.tiers[3].from_history) << "the scale tier was not decided then: a guess";
  EXPECT_NE(cvs::certify::to_text(plan).find("scale     ~"), std::string::npos)
      << cvs::certify::to_text(plan);
  // That certification's nodes tier stepped for no target: no guide to one that steps for 15 %.
  p.in.certificate.inputs.detect_slowdown_pct = 15;
  const auto targeted = cvs::certify::make_plan(p.o, p.in, t, {});
  EXPECT_TRUE(targeted.tiers[0].from_history);
  EXPECT_FALSE(targeted.tiers[1].from_history);
  EXPECT_NE(targeted.tiers[1].runs.find("(a guess: the history's certification stepped for "
                                        "--detect-slowdown-pct 0)"),
            std::string::npos)
      << targeted.tiers[1].runs;
  fs::remove_all(dir);
}
