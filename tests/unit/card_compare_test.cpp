// Verification cards and run-to-run comparison, on the results.json of a real CPU session.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cvs/results/card.hpp"
#include "cvs/results/compare.hpp"
#include "cvs/results/results_file.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using J = nlohmann::ordered_json;

namespace {

J results() {
  return cvs::test::read_json(cvs::test::data("results/cpu_single_results.json"));
}

std::string kind(const J& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  return "bool";
}

// The peer's record: a subset of the shared Megatron-Bridge cards file, kept in the repo with
// every (key, JSON type) pair the full file uses.
std::vector<J> shared_entries() {
  const J doc = cvs::test::read_json(cvs::test::data("cards/megatron_bridge_cards_subset.json"));
  std::vector<J> v;  // keep doc alive: ranging over a temporary's member dangles
  for (const auto& m : doc["models"])
    for (const auto& e : m["entries"]) v.push_back(e);
  return v;
}

}  // namespace

TEST(Card, EntriesHaveTheKeysAndTypesOfTheSharedCards) {
  const auto theirs = shared_entries();
  ASSERT_FALSE(theirs.empty()) << "tests/data/cards/megatron_bridge_cards_subset.json has no entries";
  const auto card = cvs::make_card(cvs::results_from_json(results()), "2026-12-02");
  const auto& ours = card["models"][0]["entries"];
  ASSERT_EQ(ours.size(), 3u) << "two sweeps and the checkpoint_resume entry";
  for (const auto& e : ours) {
    std::set<std::string> ok, their_keys;
    for (const auto& t : theirs) {
      their_keys.clear();
      for (auto it = t.begin(); it != t.end(); ++it) their_keys.insert(it.key());
      std::set<std::string> our_keys;
      for (auto it = e.begin(); it != e.end(); ++it) our_keys.insert(it.key());
      EXPECT_EQ(our_keys, their_keys) << e["entry_id"];
      break;
    }
    // Each value has a type the peer uses for that key somewhere.
    for (auto it = e.begin(); it != e.end(); ++it) {
      std::set<std::string> seen;
      for (const auto& t : theirs) seen.insert(kind(t[it.key()]));
      EXPECT_TRUE(seen.count(kind(it.value()))) << it.key() << " is " << kind(it.value());
    }
    for (const char* m : {"final_loss", "initial_loss", "last_10_steps_model_tflops_per_gpu_avg",
                          "last_10_steps_step_time_ms_avg", "last_10_steps_tokens_per_second_per_gpu_avg"})
      EXPECT_TRUE(e["metrics"].contains(m)) << m;
    const auto& topo = e["command_topologies"][0];
    EXPECT_TRUE(topo["nodes"].is_string());
    EXPECT_TRUE(topo["gpus_per_node"].is_string());
    EXPECT_TRUE(topo["total_gpus"].is_number_integer());
  }
  const auto& perf = ours[0];
  EXPECT_EQ(perf["workflow"], "pretrain_performance");
  EXPECT_EQ(perf["status"], "verified");
  EXPECT_EQ(perf["last_verified"], "2026-12-02");
  EXPECT_EQ(perf["precision"], "bf16");
  EXPECT_DOUBLE_EQ(perf["metrics"]["final_loss"].get<double>(),
                   results()["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["metrics"]["final_loss"].get<double>());
  EXPECT_NE(perf["expected_result"].get<std::string>().find("Gates: "), std::string::npos)
      << perf["expected_result"];
  EXPECT_EQ(ours[2]["workflow"], "checkpoint_resume");
  EXPECT_EQ(ours[2]["status"], "verified");
}

TEST(Card, AFailedGateLeavesTheEntryUnverified) {
  auto r = results();
  for (auto& st : r["stages"])
    if (st["test"].get<std::string>().find("BS_2__PRECISION_BF16__SL_128__final_loss") != std::string::npos) {
      st["outcome"] = "FAIL";
      st["status"] = "FAIL";
    }
  const auto card = cvs::make_card(cvs::results_from_json(r), "2026-12-02");
  EXPECT_EQ(card["models"][0]["entries"][0]["status"], "unverified");
  EXPECT_TRUE(card["models"][0]["entries"][0]["last_verified"].is_null());
  EXPECT_EQ(card["models"][0]["entries"][1]["status"], "verified") << "the other sweep is unaffected";
}

// A sweep's stages are those that recorded its sweep key: the card reads no gtest test name.
TEST(Card, ASweepsStagesAreThoseThatRecordedItsKeyWhateverTheirTestNames) {
  auto r = results();
  const auto before = cvs::make_card(cvs::results_from_json(r), "2026-12-02");
  int i = 0;
  for (auto& st : r["stages"]) st["test"] = "renamed_" + std::to_string(i++);
  const auto after = cvs::make_card(cvs::results_from_json(r), "2026-12-02");
  const auto& was = before["models"][0]["entries"];
  const auto& is = after["models"][0]["entries"];
  ASSERT_EQ(is.size(), was.size());
  EXPECT_EQ(is[0]["status"], "verified");
  EXPECT_NE(is[0]["expected_result"].get<std::string>().find(" Gates: "), std::string::npos);
  for (std::size_t e = 0; e < is.size(); ++e) {
    EXPECT_EQ(is[e]["status"], was[e]["status"]) << e;
    EXPECT_EQ(is[e]["expected_result"], was[e]["expected_result"])
        << e << ": the same gates, found by sweep key";
  }
}

TEST(Card, AnInconclusiveOrErroredGateLeavesTheEntryUnverifiedEvenWhenItPassed) {
  for (const char* outcome : {"INCONCLUSIVE", "ERROR"}) {
    auto r = results();
    for (auto& st : r["stages"])
      if (st["test"].get<std::string>().find("BS_2__PRECISION_BF16__SL_128__final_loss") !=
          std::string::npos) {
        st["outcome"] = outcome;
        st["status"] = "PASS";  // on_inconclusive: pass lets the test pass; the card must not
      }
    const auto card = cvs::make_card(cvs::results_from_json(r), "2026-12-03");
    EXPECT_EQ(card["models"][0]["entries"][0]["status"], "unverified") << outcome;
    EXPECT_EQ(card["models"][0]["entries"][1]["status"], "verified") << outcome;
  }
}

TEST(Compare, IdenticalRunsHaveNoRegression) {
  auto c = cvs::compare_results(cvs::results_from_json(results()), cvs::results_from_json(results()), 5.0);
  EXPECT_FALSE(c.any_regression());
  EXPECT_FALSE(c.deltas.empty());
  for (const auto& d : c.deltas) EXPECT_EQ(d.delta_pct, 0.0) << d.metric;
}

TEST(Compare, WorseBeyondToleranceIsARegressionInEitherDirection) {
  auto old = results(), slower = results();
  auto& m = slower["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["metrics"];
  m["tokens_per_sec_per_gpu"] = m["tokens_per_sec_per_gpu"].get<double>() * 0.90;
  m["step_time_p95_ms"] = m["step_time_p95_ms"].get<double>() * 1.04;
  m["initial_loss"] = m["initial_loss"].get<double>() * 2.0;
  auto c = cvs::compare_results(cvs::results_from_json(old), cvs::results_from_json(slower), 5.0);
  EXPECT_TRUE(c.any_regression());
  for (const auto& d : c.deltas) {
    if (d.sweep != "BS=2,PRECISION=BF16,SL=128") continue;
    if (d.metric == "tokens_per_sec_per_gpu") {
      EXPECT_TRUE(d.regression);
      EXPECT_NEAR(d.delta_pct, -10.0, 1e-9);
    }
    if (d.metric == "step_time_p95_ms") {
      EXPECT_FALSE(d.regression) << "4% is within 5%";
    }
    if (d.metric == "initial_loss") {
      EXPECT_FALSE(d.regression) << "initial loss describes the model, not the cluster";
    }
  }
  auto faster = results();
  faster["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["metrics"]["tokens_per_sec_per_gpu"] =
      old["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["metrics"]["tokens_per_sec_per_gpu"].get<double>() * 1.5;
  EXPECT_FALSE(cvs::compare_results(cvs::results_from_json(old), cvs::results_from_json(faster), 5.0)
                   .any_regression());
}

namespace {

// A session whose sweeps decided tokens/s on the interval [lo, hi] around est (point figure 1).
nlohmann::ordered_json with_interval(double est, double lo, double hi) {
  auto r = results();
  for (auto& [key, sw] : r["sweeps"].items()) {
    sw["metrics"]["tokens_per_sec_per_gpu"] = 1.0;  // the point figure: never what is compared
    sw["steady_state"] = {
        {"found", true},
        {"rule", "x"},
        {"confidence", 0.95},
        {"first_step", 5},
        {"steps", 95},
        {"intervals", {{"tokens_per_sec_per_gpu", {{"estimate", est}, {"lo", lo}, {"hi", hi}}}}}};
  }
  return r;
}

}  // namespace

// Estimates with their intervals: an overlap is within noise, whatever the delta; intervals that
// separate are a regression when worse beyond the tolerance, both intervals printed.
TEST(Compare, IntervalsThatOverlapAreWithinNoiseAndSeparatedOnesARegression) {
  const auto a = cvs::results_from_json(with_interval(10000, 9000, 11000));
  const auto b = cvs::results_from_json(with_interval(9300, 8500, 10100));  // -7 %, overlapping
  auto c = cvs::compare_results(a, b, 5.0);
  EXPECT_FALSE(c.any_regression());
  bool seen = false;
  for (const auto& d : c.deltas)
    if (d.metric == "tokens_per_sec_per_gpu") {
      seen = true;
      EXPECT_TRUE(d.within_noise);
      EXPECT_DOUBLE_EQ(d.old_value, 10000) << "the estimates, not the point figures";
      EXPECT_NEAR(d.delta_pct, -7.0, 1e-9);
    }
  EXPECT_TRUE(seen);
  const auto slow = cvs::results_from_json(with_interval(3300, 3100, 3500));
  c = cvs::compare_results(a, slow, 5.0);
  EXPECT_TRUE(c.any_regression());
  auto dir = fs::temp_directory_path() / ("cvs_cmp_iv_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.json") << with_interval(10000, 9000, 11000).dump();
  std::ofstream(dir / "b.json") << with_interval(9300, 8500, 10100).dump();
  std::ofstream(dir / "slow.json") << with_interval(3300, 3100, 3500).dump();
  const std::string cvs = CVS_BINARY;
  auto p =
      cvs::test::run_command(cvs + " compare " + (dir / "a.json").string() + " " + (dir / "b.json").string());
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("[9000, 11000] -> [8500, 10100]: within noise"), std::string::npos) << p.out;
  p = cvs::test::run_command(cvs + " compare " + (dir / "a.json").string() + " " +
                             (dir / "slow.json").string());
  EXPECT_EQ(p.exit_code, 1) << p.out;
  EXPECT_NE(p.out.find("REGRESSION [9000, 11000] -> [3100, 3500]"), std::string::npos) << p.out;
  fs::remove_all(dir);
}

TEST(Compare, CliExitsNonZeroOnRegression) {
  auto dir = fs::temp_directory_path() / ("cvs_cmp_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto slow = results();
  auto& m = slow["sweeps"]["BS=4,PRECISION=BF16,SL=128"]["metrics"];
  m["step_time_mean_ms"] = m["step_time_mean_ms"].get<double>() * 1.5;
  std::ofstream(dir / "new.json") << slow.dump();
  const std::string old = cvs::test::data("results/cpu_single_results.json").string();
  auto same = cvs::test::run_command(std::string(CVS_BINARY) + " compare " + old + " " + old);
  EXPECT_EQ(same.exit_code, 0) << same.out;
  auto reg =
      cvs::test::run_command(std::string(CVS_BINARY) + " compare " + old + " " + (dir / "new.json").string());
  EXPECT_EQ(reg.exit_code, 1) << reg.out;
  EXPECT_NE(reg.out.find("training.step_time_mean_ms"), std::string::npos);
  EXPECT_NE(reg.out.find("+50.00  REGRESSION"), std::string::npos) << reg.out;
  auto card = cvs::test::run_command(std::string(CVS_BINARY) + " card " + old + " --out " +
                                     (dir / "card.json").string());
  EXPECT_EQ(card.exit_code, 0) << card.out;
  EXPECT_NE(card.out.find("3 of 3 entries verified"), std::string::npos) << card.out;
  auto again = cvs::test::run_command(std::string(CVS_BINARY) + " card " + old + " --out " +
                                      (dir / "card.json").string());
  EXPECT_EQ(again.exit_code, 2) << "never overwrites";
  fs::remove_all(dir);
}

TEST(Card, TopologyAndMemoryUseTheSharedCardsKeys) {
  auto r = results();
  auto& sweep = r["sweeps"]["BS=2,PRECISION=BF16,SL=128"];
  sweep["parallelism"] = {{"ici_fsdp_parallelism", 8},
                          {"ici_tensor_parallelism", 2},
                          {"dcn_pipeline_parallelism", 4},
                          {"dcn_data_parallelism", -1}};
  sweep["metrics"]["peak_memory_gb"] = 61.5;
  const auto card = cvs::make_card(cvs::results_from_json(r), "2026-12-03");
  const auto& e = card["models"][0]["entries"][0];
  const auto& topo = e["command_topologies"][0];
  EXPECT_EQ(topo["tensor_parallel"], "2");
  EXPECT_EQ(topo["pipeline_parallel"], "4");
  EXPECT_EQ(topo["context_parallel"], "1");
  EXPECT_EQ(topo["expert_parallel"], "1");
  EXPECT_EQ(topo["ici_fsdp_parallelism"], "8") << "MaxText's own keys stay beside them";
  EXPECT_DOUBLE_EQ(e["metrics"]["peak_allocated_memory_gib"].get<double>(), 61.5);
  EXPECT_FALSE(e["metrics"].contains("peak_memory_gb"));
  // A record with the mesh that ran (results.json mesh_axes, config/mesh's plan): the card states
  // its axes, a -1 as MaxText filled it (tensor -1 on 8 devices with fsdp 2: 4), never 1.
  sweep["parallelism"] = {{"ici_fsdp_parallelism", 2}, {"ici_tensor_parallelism", -1}};
  sweep["mesh_axes"] = {{"ici", {{"ici_fsdp_parallelism", 2}, {"ici_tensor_parallelism", 4}}},
                        {"dcn", {{"dcn_pipeline_parallelism", 2}}}};
  const auto planned = cvs::make_card(cvs::results_from_json(r), "2026-12-03");
  const auto& ptopo = planned["models"][0]["entries"][0]["command_topologies"][0];
  EXPECT_EQ(ptopo["tensor_parallel"], "4");
  EXPECT_EQ(ptopo["pipeline_parallel"], "2");
  EXPECT_EQ(ptopo["context_parallel"], "1");
  // Every topology and metric key we write is one the shared cards use.
  std::set<std::string> theirs_topo, theirs_metrics;
  for (const auto& t : shared_entries()) {
    for (const auto& ct : t.value("command_topologies", J::array()))
      for (auto it = ct.begin(); it != ct.end(); ++it) theirs_topo.insert(it.key());
    const J metrics = t.value("metrics", J::object());
    for (auto it = metrics.begin(); it != metrics.end(); ++it) theirs_metrics.insert(it.key());
  }
  for (const char* k : {"tensor_parallel", "pipeline_parallel", "context_parallel", "expert_parallel"})
    EXPECT_TRUE(theirs_topo.count(k)) << k;
  EXPECT_TRUE(theirs_metrics.count("peak_allocated_memory_gib"));
}
