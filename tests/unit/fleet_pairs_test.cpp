// Fleet pairs (lib/cvs/fleet/fleet_pairs.hpp): which two-node runs are made, in node-disjoint batches,
// and which node or link is named, over a simulated fabric (the runner: a step time per pair made
// from each node's link; the real two-node runs are tests/e2e/fleet_pairs_test.sh's).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <tuple>

#include "cvs/fleet/fleet_pairs.hpp"

namespace {

// A fabric: each node's link adds its delay to a pair's step; a listed pair adds its own; a
// listed node fails every run it is in. Counts the runs and checks each batch shares no node.
struct Fabric {
  std::map<std::string, double> link_ms;
  std::map<std::set<std::string>, double> pair_ms;
  std::set<std::string> broken;
  std::set<std::string> noisy_once;  // the first run with this node is slowed by a neighbour's burst
  int runs = 0, batches = 0;
  std::set<std::tuple<int, std::string, std::string, int>> made;  // (round, a, b, tries) of each run
  cvs::PairRunner runner() {
    return [this](std::vector<cvs::PairRun>& batch) {
      ++batches;
      std::set<std::string> busy;
      for (auto& p : batch) {
        EXPECT_TRUE(busy.insert(p.a).second && busy.insert(p.b).second) << "a node twice in one batch";
        // A run the runner cannot tell from an earlier one would share its folder (its results).
        EXPECT_TRUE(made.insert({p.round, p.a, p.b, p.tries}).second)
            << "round " << p.round << " " << p.a << "+" << p.b << " try " << p.tries << " asked twice";
        ++runs;
        if (broken.count(p.a) || broken.count(p.b)) {
          p.status = cvs::Outcome::Error;
          p.failure = "test_training_run: the run ended";
          continue;
        }
        p.status = cvs::Outcome::Pass;
        p.sweep = "BS=2";
        p.step_ms = 60 + link_ms[p.a] + link_ms[p.b] + pair_ms[{p.a, p.b}];
        for (const auto& n : {p.a, p.b})
          if (noisy_once.erase(n)) p.step_ms += 300;
      }
    };
  }
};

std::vector<std::string> names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("n" + std::to_string(i));
  return v;
}

std::vector<std::string> suspects(const cvs::PairsResult& r) {
  std::vector<std::string> v;
  for (const auto& s : r.suspects) v.push_back(s.first);
  return v;
}

}  // namespace

TEST(FleetPairs, AHealthyFabricNeedsOneRoundAndNamesNothing) {
  Fabric f;
  for (const auto& n : names(8)) f.link_ms[n] = 1.0 * (n.back() - '0');  // a few % apart
  const auto r = cvs::localise_links(names(8), f.runner(), 0.25);
  EXPECT_EQ(f.runs, 4);
  EXPECT_EQ(f.batches, 1) << "disjoint pairs all at once";
  EXPECT_TRUE(r.suspects.empty());
  EXPECT_TRUE(r.slow_links.empty());
  for (const auto& run : r.runs) EXPECT_FALSE(run.slow);
}

TEST(FleetPairs, ANodeWithASlowLinkIsNamedWithTheEvidence) {
  Fabric f;
  f.link_ms["n3"] = 200;  // its pair (n2, n3) is slow; n2 is fast with a known-good node
  const auto r = cvs::localise_links(names(4), f.runner(), 0.25);
  EXPECT_EQ(suspects(r), std::vector<std::string>{"n3"});
  EXPECT_TRUE(r.slow_links.empty());
  EXPECT_EQ(f.runs, 6)
      << "2 pairs, then each node of the slow pair with a known-good one; each slow run twice";
  EXPECT_DOUBLE_EQ(r.reference_ms, 60);
  const auto& why = r.suspects.front().second;
  EXPECT_NE(why.find("every two-node run with it was slow"), std::string::npos) << why;
  EXPECT_NE(why.find("with n2 260 ms a step, 333.333 % above the pairs' reference"), std::string::npos)
      << why;
  EXPECT_NE(why.find("; with n1 260 ms"), std::string::npos) << "re-paired with a known-good node: " << why;
}

TEST(FleetPairs, TwoNodesSlowOnlyTogetherAreASlowLinkNotSuspects) {
  Fabric f;
  f.pair_ms[{"n4", "n5"}] = 100;  // the cable between them, say
  const auto r = cvs::localise_links(names(6), f.runner(), 0.25);
  EXPECT_TRUE(r.suspects.empty());
  ASSERT_EQ(r.slow_links.size(), 1u);
  EXPECT_EQ(r.slow_links[0], std::make_pair(std::string("n4"), std::string("n5")));
}

TEST(FleetPairs, AFailedPairRunIsSlowAndTheBrokenNodeIsNamed) {
  Fabric f;
  f.broken = {"n1"};
  const auto r = cvs::localise_links(names(5), f.runner(), 0.25);  // odd: n4 also with n0
  EXPECT_EQ(suspects(r), std::vector<std::string>{"n1"});
  EXPECT_NE(r.suspects[0].second.find("the run ended ERROR (test_training_run: the run ended)"),
            std::string::npos)
      << r.suspects[0].second;
}

TEST(FleetPairs, HalfTheFabricSlowStillHasAReferenceAndRunsAreBounded) {
  // Up to half of the pairs slow: the reference is the faster half's median, not the slow ones'.
  for (int n : {4, 7, 16, 33}) {
    Fabric f;
    const auto nodes = names(n);
    for (int i = 1; i < n / 2; i += 2)
      f.link_ms[nodes[i]] = 300;  // a node of every other pair of the first half
    const auto r = cvs::localise_links(nodes, f.runner(), 0.25);
    EXPECT_LE(f.runs, 4 * n) << n << " nodes";
    std::vector<std::string> want;
    for (int i = 1; i < n / 2; i += 2) want.push_back(nodes[i]);
    auto got = suspects(r);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << n << " nodes";
    EXPECT_LT(r.reference_ms, 100) << n << " nodes";
  }
}

TEST(FleetPairs, ABurstOfNoiseIsRunAgainAndForgiven) {
  Fabric f;
  f.noisy_once = {"n2"};  // (n2, n3)'s first run is slow; its second is not
  const auto r = cvs::localise_links(names(4), f.runner(), 0.25);
  EXPECT_TRUE(r.suspects.empty());
  EXPECT_EQ(f.runs, 3) << "two pairs, the slow one once more; no round 2";
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[1].tries, 2);
  EXPECT_EQ(r.runs[1].first_ms, 360);
  EXPECT_EQ(r.runs[1].step_ms, 60);
  EXPECT_FALSE(r.runs[1].slow);
}

TEST(FleetPairs, EachRetryLandsOnItsOwnRunWhenBatchesReorderThem) {
  // Two fast pairs (four known-good nodes) for three slow ones: round 2 is (n0,n4) (n1,n5) (n2,n6)
  // (n3,n7) | (n0,n8) (n1,n9); its slow runs retried, (n0,n4) (n0,n8) (n1,n9), batch as
  // (n0,n4) (n1,n9) | (n0,n8): each retry's time must go to its own run (the links differ, so a
  // swap shows). n6 and n7 are slow only together.
  Fabric f;
  f.link_ms = {{"n4", 200}, {"n8", 300}, {"n9", 400}};
  f.pair_ms[{"n6", "n7"}] = 300;
  const auto r = cvs::localise_links(names(10), f.runner(), 0.25);
  EXPECT_DOUBLE_EQ(r.reference_ms, 60);
  auto got = suspects(r);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"n4", "n8", "n9"}));
  ASSERT_EQ(r.slow_links.size(), 1u);
  EXPECT_EQ(r.slow_links[0], std::make_pair(std::string("n6"), std::string("n7")));
  for (const auto& run : r.runs) {
    const std::set<std::string> both = {run.a, run.b};
    const double expected = 60 + f.link_ms[run.a] + f.link_ms[run.b] + f.pair_ms[both];
    EXPECT_DOUBLE_EQ(run.step_ms, expected) << run.a << "+" << run.b;
    if (run.tries == 2) {
      EXPECT_EQ(run.step_ms, run.first_ms) << "a fault persists: " << run.a << "+" << run.b;
    }
  }
}

TEST(FleetPairs, BatchesShareNoNodeAndKeepTheOrder) {
  std::vector<cvs::PairRun> pairs;
  for (const auto& [a, b] :
       std::vector<std::pair<std::string, std::string>>{{"g", "x"}, {"g", "y"}, {"h", "z"}, {"g", "w"}}) {
    pairs.emplace_back();
    pairs.back().a = a;
    pairs.back().b = b;
  }
  const auto b = cvs::disjoint_batches(pairs);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].size(), 2u);  // g+x, h+z
  EXPECT_EQ(b[0][1].b, "z");
  EXPECT_EQ(b[1][0].b, "y");
  EXPECT_EQ(b[2][0].b, "w");
}

TEST(FleetPairs, TheirSuspectsJoinTheFleetsWorstFirst) {
  cvs::FleetScore s;
  s.nodes = {{"a", false, 0, {}}, {"b", false, 0, {}}, {"c", true, 9, {}}};
  cvs::PairsResult p;
  p.suspects = {{"b", "pairs: every two-node run with it was slow"}};
  cvs::apply_pair_findings(s, p);
  EXPECT_EQ(s.suspects(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(s.nodes.back().name, "a");
  EXPECT_EQ(s.nodes[0].evidence.at(0).figure, cvs::FigureKey::kind("pairs"));
}

// The stated link detection power is met: on generated fabrics (8 nodes, every pair's step time
// measured with noise whose 95 % interval is +-2 %, each run carrying that interval), a pair slowed
// by exactly the power stated from a healthy fabric's round is slow (on its run and its run again)
// in at least 95 % of 2000 trials, and one slowed by the bound alone (min_deviation) in about half.
TEST(FleetPairs, TheStatedLinkDetectionPowerIsMetOnGeneratedFabrics) {
  std::mt19937 rng(20261205);
  const double truth = 60, half = 1.2, sigma = half / 1.959964;
  std::normal_distribution<double> noise(0, sigma);
  auto fabric = [&](double slow_pair) {
    return [&, slow_pair](std::vector<cvs::PairRun>& batch) {
      for (auto& p : batch) {
        p.status = cvs::Outcome::Pass;
        p.sweep = "BS=2";
        const bool slowed = std::set<std::string>{p.a, p.b} == std::set<std::string>{"n2", "n3"};
        p.step_ms = truth * (1 + (slowed ? slow_pair : 0)) + noise(rng);
        p.half_width_ms = half;
      }
    };
  };
  const auto healthy = cvs::localise_links(names(8), fabric(0), 0.10);
  EXPECT_TRUE(healthy.suspects.empty() && healthy.slow_links.empty());
  const auto power = cvs::link_detection_power(healthy);
  ASSERT_TRUE(power);
  EXPECT_EQ(power->pairs, 4u);
  EXPECT_DOUBLE_EQ(power->half_width_ms, half);
  // 0.10 + z(sqrt(0.95)) sigma / reference: about 12 % here.
  EXPECT_NEAR(power->slowdown, 0.10 + 1.9545 * sigma / power->reference_ms, 1e-3);
  auto slow_share = [&](double slowdown) {
    int slow = 0;
    const int trials = 2000;
    for (int k = 0; k < trials; ++k) {
      const auto r = cvs::localise_links(names(8), fabric(slowdown), 0.10);
      for (const auto& run : r.runs)
        if (run.round == 1 && std::set<std::string>{run.a, run.b} == std::set<std::string>{"n2", "n3"})
          slow += run.slow;
    }
    return static_cast<double>(slow) / trials;
  };
  EXPECT_GE(slow_share(power->slowdown), 0.95);
  const double at_bound = slow_share(0.10);
  EXPECT_GT(at_bound, 0.1);
  EXPECT_LT(at_bound, 0.6) << "the bound alone is caught about as often as not";
  cvs::PairsResult none;
  EXPECT_FALSE(cvs::link_detection_power(none)) << "no reference, no power";
}
