// Stalls (#57): a step far above the steps around it that nothing in the log explains is an event,
// named with its step, its seconds and what it cost, left out of the steady figures and counted in
// stalled_steps, stall_seconds and time_lost_pct; through compute_metrics and `cvs metrics` alike.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cvs/logs/logscan.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/run_figures.hpp"
#include "test_helpers.hpp"

namespace {

// A MaxText step line: `work` TFLOPs of a step over its seconds (MaxText prints the rate).
std::string step_line(long long n, double seconds, double loss, double work = 100) {
  char b[200];
  std::snprintf(b, sizeof b, "completed step: %lld, seconds: %.3f, TFLOP/s/device: %.3f, loss: %.3f\n", n,
                seconds, work / seconds, loss);
  return b;
}

// Fifty ~1 s steps (0.98-1.02 s, step 0 compiling 30 s) with steps 20 and 35 taking 100 s: the
// shape of the issue's multi-slice TPU log (about fifty ~1 s steps, two ~100x longer).
std::string two_stalls_log(const std::string& between = "") {
  std::string log = step_line(0, 30.0, 10.0);
  for (long long n = 1; n < 50; ++n) {
    const double s = n == 20 || n == 35 ? 100.0 : 0.98 + 0.01 * static_cast<double>(n % 5);
    if (n == 35) log += between;
    log += step_line(n, s, 10.0 - 0.05 * static_cast<double>(n));
  }
  return log;
}

std::vector<cvs::StepRecord> steps_of(const std::string& log) {
  struct Keep final : cvs::RecordSink {
    std::vector<cvs::StepRecord> steps;
    void step(const cvs::StepRecord& r) override { steps.push_back(r); }
    void eval(const cvs::EvalRecord&) override {}
  } keep;
  const auto path =
      std::filesystem::temp_directory_path() / ("cvs_stall_" + std::to_string(::getpid()) + ".log");
  std::ofstream(path) << log;
  cvs::scan_log_file(path.string(), cvs::default_error_patterns(), &keep);
  std::filesystem::remove(path);
  return keep.steps;
}

nlohmann::json cvs_metrics(const std::string& log, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()) + ".log");
  std::ofstream(path) << log;
  const auto r =
      cvs::test::run_command(std::string(CVS_BINARY) + " metrics " + path.string() + " 2>/dev/null");
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST(Stalls, TwoHundredfoldStepsAreNamedCountedAndLeftOutOfTheSteadyFigures) {
  const auto m = cvs::compute_metrics(steps_of(two_stalls_log()), {}, {});
  EXPECT_EQ(*m.get(cvs::Metric::StalledSteps), 2);
  ASSERT_EQ(m.stalls.size(), 2u);
  EXPECT_EQ(m.stalls[0].step, 20);
  EXPECT_EQ(m.stalls[1].step, 35);
  EXPECT_NEAR(m.stalls[0].lost(), 99.0, 0.05);
  EXPECT_NEAR(*m.get(cvs::Metric::StallSeconds), 198.0, 0.1);
  // Steps 2-49 (the warm-up is steps 0 and 1): 46 steps of ~1 s and the two stalls.
  EXPECT_NEAR(*m.get(cvs::Metric::TimeLostPct), 100 * 198.0 / (46 * 1.0 + 200), 0.3);
  // The steady figures are the ordinary steps': 100 TFLOPs a step over ~1 s.
  EXPECT_NEAR(*m.get(cvs::Metric::TflopsPerSecPerGpu), 100.0, 1.0);
  EXPECT_NEAR(*m.get(cvs::Metric::StepTimeSeconds), 1.0, 0.01);
  bool said = false;
  for (const auto& n : m.notes)
    said = said || n.rfind("2 stall(s) cost 198 s, 80.46 % of the steps' time (step 20 100 s, step 35 100 s)",
                           0) == 0;
  EXPECT_TRUE(said) << "[" << m.stall_summary << "]";
}

TEST(Stalls, CvsMetricsGivesTheOrdinaryStepsFigureAndNamesTheStalls) {
  const auto out = cvs_metrics(two_stalls_log(), "cvs_stalls_");
  EXPECT_NEAR(out["metrics"]["tflops_per_sec_per_gpu"].get<double>(), 100.0, 1.0);
  EXPECT_EQ(out["metrics"]["stalled_steps"], 2);
  EXPECT_NEAR(out["metrics"]["stall_seconds"].get<double>(), 198.0, 0.1);
  EXPECT_NEAR(out["metrics"]["time_lost_pct"].get<double>(), 80.5, 0.1);
  ASSERT_EQ(out["stalls"].size(), 2u);
  EXPECT_EQ(out["stalls"][1]["step"], 35);
  EXPECT_EQ(out["stalls"][1]["line_no"], 36);
  EXPECT_NEAR(out["stalls"][1]["lost_seconds"].get<double>(), 99.0, 0.05);
}

// What the log explains is not a stall: an eval after step 34 (step 35's time holds it).
TEST(Stalls, AStepTheLogExplainsIsNoStall) {
  const auto m = cvs::compute_metrics(steps_of(two_stalls_log()), {{34, 4.0}}, {});
  EXPECT_EQ(*m.get(cvs::Metric::StalledSteps), 1);
  ASSERT_EQ(m.stalls.size(), 1u);
  EXPECT_EQ(m.stalls[0].step, 20);
  // And a run without one has figures of none, so a gate on them passes.
  std::string quiet;
  for (long long n = 0; n < 30; ++n) quiet += step_line(n, n == 0 ? 30 : 1.0, 5);
  const auto q = cvs::compute_metrics(steps_of(quiet), {}, {});
  EXPECT_EQ(*q.get(cvs::Metric::StalledSteps), 0);
  EXPECT_EQ(*q.get(cvs::Metric::TimeLostPct), 0);
  EXPECT_TRUE(q.stall_summary.empty());
}

// The factor is the config's: at 150x, the two 100x steps are slow steps, not stalls.
TEST(Stalls, TheFactorIsStatisticsStallFactor) {
  cvs::MetricsContext ctx;
  ctx.stall_factor = 150;
  const auto m = cvs::compute_metrics(steps_of(two_stalls_log()), {}, ctx);
  EXPECT_EQ(*m.get(cvs::Metric::StalledSteps), 0);
  auto c = cvs::test::spec_example_untagged();
  c["statistics"] = {{"stall_factor", 1.2}};
  EXPECT_TRUE(cvs::test::has_issue(cvs::test::issues_of(c), "/statistics/stall_factor", "not above 1.5"));
}

// Warm-up on evidence, not by position (#57).
namespace {
cvs::RunMetrics metrics_of_lines(const std::string& log) {
  return cvs::compute_metrics(steps_of(log), {}, {});
}
}  // namespace

// Three uniform 500 ms lines numbered from 1 (the shape of AMD CVS's own parser tests): no record
// is evidently not a steady step, so the spec's figures are those of all three.
TEST(Warmup, ThreeUniformLinesGiveTheSpecsFigures) {
  std::string log;
  for (long long n = 1; n <= 3; ++n)
    log +=
        "completed step: " + std::to_string(n) +
        ", seconds: 0.500, TFLOP/s/device: 200.000, Tokens/s/device: 4000.000, total_weights: 2048, loss: " +
        std::to_string(6 - n) + ".000\n";
  const auto m = metrics_of_lines(log);
  EXPECT_EQ(m.warmup_dropped, 0u);
  EXPECT_DOUBLE_EQ(*m.get(cvs::Metric::StepTimeSeconds), 0.5);
  EXPECT_DOUBLE_EQ(*m.get(cvs::Metric::StepTimeP50Ms), 500);
  EXPECT_DOUBLE_EQ(*m.get(cvs::Metric::Last10StepsStepTimeMsAvg), 500);
  EXPECT_DOUBLE_EQ(*m.get(cvs::Metric::TokensPerSecTotal), 4000);
  EXPECT_DOUBLE_EQ(*m.get(cvs::Metric::Last10StepsTokensPerSecondPerGpuAvg), 4000);
}

// A log cut from mid-run: the v3-8 lines of MaxText issue #8 (amankhandelia, 2023-04-28: steps
// 15107-15110 of base.yml, 2.16-2.167 s each) keep their first two; a run that starts at step 0
// still drops its compile step and step 1; a resumed run's compile-long first step is dropped.
TEST(Warmup, ALogCutFromMidRunKeepsItsFirstSteps) {
  const std::string v3 =
      "completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191\n"
      "completed step: 15108, seconds: 2.164, TFLOP/s: 36.771, loss: 2.173\n"
      "completed step: 15109, seconds: 2.166, TFLOP/s: 36.739, loss: 2.191\n"
      "completed step: 15110, seconds: 2.160, TFLOP/s: 36.841, loss: 2.180\n";
  const auto m = metrics_of_lines(v3);
  EXPECT_EQ(m.warmup_dropped, 0u);
  EXPECT_EQ(m.point_steps->first, 15107);
  EXPECT_NEAR(*m.get(cvs::Metric::StepTimeSeconds), (2.167 + 2.164 + 2.166 + 2.160) / 4, 1e-12);
  std::string resumed = "completed step: 6, seconds: 40.000, TFLOP/s: 2.000, loss: 2.2\n";
  for (long long n = 7; n < 12; ++n)
    resumed += "completed step: " + std::to_string(n) + ", seconds: 2.000, TFLOP/s: 40.000, loss: 2.1\n";
  const auto r = metrics_of_lines(resumed);
  EXPECT_EQ(r.warmup_dropped, 1u) << "step 6 compiles; step 7 is a steady step";
  EXPECT_EQ(r.point_steps->first, 7);
}

// A cut last line gives no value: "loss: 5.9" where every step line before it goes on
// "lm_loss: ..., perplexity: ..." was cut mid-write; a whole last line without its newline counts.
TEST(Warmup, ACutLastLineIsLeftOutAWholeOneCounts) {
  const std::string whole =
      "completed step: 1, seconds: 0.004, TFLOP/s/device: 0.149, Tokens/s/device: 63147.509, total_weights: "
      "256, "
      "loss: 6.015, lm_loss: 6.015, perplexity: 409.336\n"
      "completed step: 2, seconds: 0.004, TFLOP/s/device: 0.149, Tokens/s/device: 63147.509, total_weights: "
      "256, "
      "loss: 5.915, lm_loss: 5.915, perplexity: 370.400\n";
  const std::string last =
      "completed step: 3, seconds: 0.004, TFLOP/s/device: 0.149, Tokens/s/device: 63147.509, total_weights: "
      "256, "
      "loss: 5.905, lm_loss: 5.905, perplexity: 366.700";
  const auto cut = cvs_metrics(whole + last.substr(0, last.find("loss: 5.9") + 9), "cvs_cut_");
  EXPECT_EQ(cut["steps"], 2);
  EXPECT_DOUBLE_EQ(cut["metrics"]["final_loss"].get<double>(), 5.915);
  bool said = false;
  for (const auto& n : cut["notes"])
    said = said || n.get<std::string>().find("cut mid-write, left out") != std::string::npos;
  EXPECT_TRUE(said) << cut["notes"].dump();
  const auto full = cvs_metrics(whole + last, "cvs_whole_");
  EXPECT_EQ(full["steps"], 3);
  EXPECT_DOUBLE_EQ(full["metrics"]["final_loss"].get<double>(), 5.905);
}
