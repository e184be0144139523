#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/logs/metrics_file.hpp"
#include "cvs/results/compare.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/run_figures.hpp"
#include "cvs/verdicts/evaluation.hpp"
#include "test_helpers.hpp"

namespace {
cvs::StepRecord step(long long n, double secs, double loss, double tflops = 100, double tokens = 1000) {
  cvs::StepRecord r;
  r.step = n;
  r.seconds = secs;
  r.loss = loss;
  r.tflops_per_device = tflops;
  r.tokens_per_device = tokens;
  return r;
}
}  // namespace

TEST(Metrics, WarmupIsTheFirstTwoRecordsByPosition) {
  // Steps 6 and 7 of a resumed run are its warm-up: huge times that must not count.
  std::vector<cvs::StepRecord> s = {step(6, 50.0, 5.0, 1, 1), step(7, 40.0, 4.9, 1, 1), step(8, 1.0, 4.8),
                                    step(9, 1.0, 4.7), step(10, 3.0, 4.6)};
  auto m = cvs::compute_metrics(s, {}, {});
  EXPECT_EQ(m.warmup_dropped, 2u);
  EXPECT_DOUBLE_EQ(*m.get("step_time_seconds"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(*m.get("step_time_p50_ms"), 1000.0);
  EXPECT_DOUBLE_EQ(*m.get("initial_loss"), 5.0);
  EXPECT_DOUBLE_EQ(*m.get("final_loss"), 4.6);
  EXPECT_EQ(*m.get("loss_decreased"), 1.0);
}

// A record the log says holds an eval (or a checkpoint save, or a profiler window) and that is
// over 1.5x the steps around it is no step's time: left out of every speed figure, named; a slow
// step the log says nothing about stays (it is what a speed gate is for) while it is under the
// stall factor (5x: over it, a stall, #57; step 7 was 9 s here before stalls were named).
TEST(Metrics, AStepThatHoldsAnEvalIsLeftOutAndSaid) {
  std::vector<cvs::StepRecord> s = {step(0, 20, 5), step(1, 1, 5)};
  for (long long n = 2; n < 12; ++n) s.push_back(step(n, n == 7 ? 4.0 : 1.0, 5, 100, 1000));
  s.push_back(step(12, 6.0, 5, 100.0 / 6, 1000.0 / 6));  // after the eval of step 11
  auto m = cvs::compute_metrics(s, {{11, 4.0}}, {});
  ASSERT_EQ(m.excluded.size(), 1u);
  EXPECT_EQ(m.excluded[0].step, 12);
  EXPECT_EQ(m.excluded[0].rule, cvs::ExcludedBecause::Eval);
  EXPECT_DOUBLE_EQ(*m.get("step_time_seconds"), 13.0 / 10);  // steps 2-11, the slow step 7 in it
  bool said = false;
  for (const auto& n : m.notes) said = said || n.find("includes the eval after step 11") != std::string::npos;
  EXPECT_TRUE(said);
  // A profiler window the log opens and closes around step 5.
  std::vector<cvs::StepRecord> p = {step(0, 20, 5), step(1, 1, 5)};
  for (long long n = 2; n < 12; ++n) {
    p.push_back(step(n, n == 5 ? 4.0 : 1.0, 5));
    p.back().line_no = n * 10;
  }
  auto mp = cvs::compute_metrics(
      p, {}, {}, {{cvs::MarkerKind::ProfilerStart, -1, 45}, {cvs::MarkerKind::ProfilerEnd, -1, 55}});
  ASSERT_EQ(mp.excluded.size(), 1u);
  EXPECT_EQ(mp.excluded[0].rule, cvs::ExcludedBecause::Profiler);
  EXPECT_DOUBLE_EQ(*mp.get("step_time_seconds"), 1.0);
}

TEST(Metrics, ThroughputIsWorkOverTimeNotAMeanOfRates) {
  // The same work per step (3000 tokens) in 3 s and twice in 1.5 s.
  std::vector<cvs::StepRecord> s = {step(0, 9, 5), step(1, 9, 5), step(2, 3, 5, 100, 1000),
                                    step(3, 1.5, 5, 200, 2000), step(4, 1.5, 5, 200, 2000)};
  auto m = cvs::compute_metrics(s, {}, {});
  EXPECT_DOUBLE_EQ(*m.get("tokens_per_sec_per_gpu"), 1500.0);  // 9000 tokens / 6 s, not (1000 + 2 x 2000) / 3
  EXPECT_DOUBLE_EQ(*m.get("tflops_per_sec_per_gpu"), 150.0);
  EXPECT_DOUBLE_EQ(*m.get("last_10_steps_tokens_per_second_per_gpu_avg"), 5000.0 / 3);
}

TEST(Metrics, ARateRoundedToZeroAddsItsTimeNotAZeroFigure) {
  // MaxText prints 3 decimals: 0.000 on one step must not make the run's TFLOP/s 0.
  std::vector<cvs::StepRecord> s = {step(0, 1, 5), step(1, 1, 5), step(2, 1, 5, 0.0, 1000),
                                    step(3, 1, 5, 0.002, 1000), step(4, 1, 5, 0.001, 1000)};
  auto m = cvs::compute_metrics(s, {}, {});
  ASSERT_TRUE(m.get("tflops_per_sec_per_gpu"));
  EXPECT_DOUBLE_EQ(*m.get("tflops_per_sec_per_gpu"), 0.001);
  // A real 2-process CPU log whose rank 1 printed "TFLOP/s/device: 0.000" at step 2.
  const auto r =
      cvs::scan_log_file(cvs::test::data("logs/cpu_2proc_rank1.log"), cvs::default_error_patterns());
  EXPECT_GT(*cvs::compute_metrics(r.steps, {}, {}).get("tflops_per_sec_per_gpu"), 0.0);
}

TEST(Metrics, TotalsAndScalingEfficiency) {
  std::vector<cvs::StepRecord> s = {step(0, 1, 5), step(1, 1, 5), step(2, 1, 5, 100, 1000),
                                    step(3, 1, 5, 100, 1000), step(4, 1, 5, 100, 1000)};
  cvs::MetricsContext ctx;
  ctx.num_nodes = 2;
  ctx.gpus_per_node = 8;
  ctx.scaling_baseline = {8000.0, 1};
  ctx.distributed = true;
  auto m = cvs::compute_metrics(s, {}, ctx);
  EXPECT_DOUBLE_EQ(*m.get("tokens_per_sec_total"), 16000.0);
  EXPECT_DOUBLE_EQ(*m.get("scaling_efficiency_pct"), 100.0);
  ctx.scaling_baseline = {0.0, 1};
  EXPECT_FALSE(cvs::compute_metrics(s, {}, ctx).get("scaling_efficiency_pct")) << "0.0 disables it";
  ctx.scaling_baseline = {8000.0, 1};
  ctx.distributed = false;
  EXPECT_FALSE(cvs::compute_metrics(s, {}, ctx).get("scaling_efficiency_pct"))
      << "a single-node run has no scaling efficiency (N/A), even with a baseline";
}

TEST(Metrics, PercentilesInterpolate) {
  EXPECT_DOUBLE_EQ(cvs::percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(
      cvs::percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, 95), 20.0);
}

TEST(Metrics, NanLossIsAFailureSignatureNotANumber) {
  std::vector<cvs::StepRecord> s = {step(0, 1, 6.0), step(1, 1, std::nan(""))};
  auto m = cvs::compute_metrics(s, {}, {});
  EXPECT_TRUE(m.nonfinite_loss);
  EXPECT_EQ(*m.first_nonfinite_step, 1);
  EXPECT_TRUE(std::isnan(*m.get("final_loss")));
  EXPECT_EQ(*m.get("loss_decreased"), 0.0);
}

TEST(Metrics, DuplicateAndGoingDownStepsAreRejected) {
  EXPECT_THROW(cvs::check_step_series({step(0, 1, 5), step(1, 1, 5), step(1, 1, 5)}, "x.log"),
               cvs::MetricsError);
  EXPECT_THROW(cvs::check_step_series({step(0, 1, 5), step(5, 1, 5), step(3, 1, 5)}, "x.log"),
               cvs::MetricsError);
  EXPECT_NO_THROW(cvs::check_step_series({step(6, 1, 5), step(7, 1, 5)}, "x.log"));
}

TEST(Metrics, LossCurveSamplesEveryNAndMilestones) {
  std::vector<cvs::StepRecord> s;
  for (int i = 0; i <= 25; ++i) s.push_back(step(i, 1, 10.0 - 0.1 * i));
  cvs::MetricsContext ctx;
  ctx.loss_curve.sample_every = 10;
  ctx.loss_curve.milestone_steps = {5, 1000};
  auto m = cvs::compute_metrics(s, {}, ctx);
  ASSERT_EQ(m.sampled_curve.size(), 5u);  // 0, 5, 10, 20 and the last step, 25
  EXPECT_EQ(m.sampled_curve[1].step, 5);
  EXPECT_EQ(m.sampled_curve.back().step, 25);
  EXPECT_NEAR(*m.get("loss_curve_slope"), -0.1, 1e-12);
}

TEST(Metrics, AShortRunStillHasASlopeFromItsFirstAndLastStep) {
  std::vector<cvs::StepRecord> s;
  for (int i = 0; i < 8; ++i) s.push_back(step(i, 1, 6.0 - 0.5 * i));
  cvs::MetricsContext ctx;
  ctx.loss_curve.sample_every = 10;
  const auto m = cvs::compute_metrics(s, {}, ctx);
  ASSERT_EQ(m.sampled_curve.size(), 2u);  // step 0 (also every 10th) and step 7
  EXPECT_EQ(m.sampled_curve.back().step, 7);
  EXPECT_NEAR(*m.get("loss_curve_slope"), -0.5, 1e-12);
}

TEST(Metrics, ConvergenceUsesEvalLossWhenAutoAndEvalRan) {
  std::vector<cvs::StepRecord> s = {step(0, 2, 9), step(1, 2, 8), step(2, 2, 7), step(3, 2, 6)};
  cvs::MetricsContext ctx;
  ctx.convergence.target_value = 7.5;
  auto train = cvs::compute_metrics(s, {}, ctx);
  EXPECT_EQ(*train.get("steps_to_target"), 2);
  EXPECT_DOUBLE_EQ(*train.get("time_to_target_seconds"), 6.0);
  auto with_eval = cvs::compute_metrics(s, {{1, 8.0}, {3, 7.0}}, ctx);
  EXPECT_EQ(*with_eval.get("steps_to_target"), 3);
  EXPECT_DOUBLE_EQ(*with_eval.get("eval_loss"), 7.0);
  ctx.convergence.target_value = 1.0;
  auto missed = cvs::compute_metrics(s, {}, ctx);
  EXPECT_FALSE(missed.get("steps_to_target"));
  EXPECT_FALSE(missed.notes.empty());
  ctx.convergence.target_value = 0.0;
  EXPECT_FALSE(cvs::compute_metrics(s, {}, ctx).get("steps_to_target")) << "<= 0 disables convergence";
}

TEST(Metrics, FromTheRealCpuLog) {
  auto r = cvs::scan_log_file(cvs::test::data("logs/cpu_tiny_12steps.log"), cvs::default_error_patterns());
  auto m = cvs::compute_metrics(r.steps, r.evals, {});
  EXPECT_DOUBLE_EQ(*m.get("initial_loss"), 6.037);
  EXPECT_DOUBLE_EQ(*m.get("final_loss"), 5.905);
  EXPECT_EQ(*m.get("loss_decreased"), 1.0);
  // 12 steps - 2 warm-up - step 2, MaxText's asynchronous step (0.004 s among 0.007-0.024 s), and
  // step 3, its catch-up (0.022 s, over 1.5x the median 0.013 s of the steps after it)
  EXPECT_EQ(m.step_times_s.size(), 8u);
  EXPECT_EQ(m.async_dropped_steps, (std::vector<long long>{2, 3}));
  EXPECT_GT(*m.get("tokens_per_sec_per_gpu"), 0);
}

TEST(MetricsFile, RealFileMatchesTheLogLinesOfTheSameRun) {
  auto rows = cvs::parse_metrics_file(
      cvs::test::read_file(cvs::test::data("logs/cpu_8steps_metrics_file.jsonl")), "m.jsonl");
  auto log = cvs::scan_log_file(cvs::test::data("logs/cpu_8steps_with_metrics_file.log"),
                                cvs::default_error_patterns());
  ASSERT_EQ(rows.size(), 8u);
  ASSERT_EQ(log.steps.size(), 8u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].step, log.steps[i].step);
    EXPECT_NEAR(rows[i].loss, log.steps[i].loss, 5e-4) << "the log prints 3 decimals";
    EXPECT_NEAR(*rows[i].seconds, *log.steps[i].seconds, 5e-4);
  }
}

TEST(MetricsFile, BareNanAndProcessDuplicatesAndBlendedRuns) {
  const std::string two_procs =
      "{\"learning/loss\": 6.5, \"perf/step_time_seconds\": 1.0, \"step\": 0.0, \"run_name\": \"NaN run\"}\n"
      "{\"learning/loss\": 6.5, \"perf/step_time_seconds\": 1.0, \"step\": 0.0, \"run_name\": \"NaN run\"}\n"
      "{\"learning/loss\": NaN, \"perf/step_time_seconds\": Infinity, \"step\": 1.0, \"run_name\": \"NaN "
      "run\"}\n"
      "{\"eval/avg_loss\": 3.0, \"step\": 1.0}\n";
  auto rows = cvs::parse_metrics_file(two_procs, "m");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(std::isnan(rows[1].loss));
  EXPECT_TRUE(std::isinf(*rows[1].seconds));
  EXPECT_THROW(cvs::parse_metrics_file(
                   "{\"learning/loss\": 6.5, \"step\": 0.0}\n{\"learning/loss\": 6.4, \"step\": 0.0}\n", "m"),
               cvs::MetricsError);
  EXPECT_THROW(cvs::parse_metrics_file("not json\n", "m"), cvs::MetricsError);
}

// The catalog is the one list: unique names; every metric a real log yields is in it; the
// interval metrics are exactly those steady_state estimates; the checkpoint times are gated by
// checkpoint_resume, everything else by test_metric.
TEST(MetricCatalog, IsTheOneListTheRestReads) {
  std::set<std::string> names;
  for (const auto& m : cvs::metric_catalog()) EXPECT_TRUE(names.insert(std::string(m.name)).second) << m.name;
  EXPECT_EQ(cvs::tracked_metric_names().size(), names.size());
  auto r = cvs::scan_log_file(cvs::test::data("logs/cpu_bs4_30steps.log"), cvs::default_error_patterns());
  cvs::MetricsContext ctx;
  const auto m = cvs::compute_metrics(r.steps, r.evals, ctx);
  for (auto k : {cvs::Metric::TokensPerSecPerGpu, cvs::Metric::StepTimeP50Ms, cvs::Metric::FinalLoss,
                 cvs::Metric::LossDecreased})
    EXPECT_TRUE(m.get(k)) << cvs::to_string(k) << ": a real run has it";
  // The catalog is in the enum's order: a Metric's spec is its row, its name reads back to it.
  ASSERT_EQ(cvs::metric_catalog().size(), cvs::kMetricCount);
  for (std::size_t i = 0; i < cvs::kMetricCount; ++i) {
    const auto& spec = cvs::metric_catalog()[i];
    EXPECT_EQ(static_cast<std::size_t>(spec.id), i) << spec.name;
    EXPECT_EQ(cvs::metric_from_name(spec.name), spec.id) << spec.name;
    EXPECT_EQ(cvs::to_string(spec.id), spec.name);
  }
  EXPECT_EQ(m.values.get("final_loss"), m.get(cvs::Metric::FinalLoss));
  EXPECT_FALSE(m.values.get("no_such_metric"));
  // A long steady run (400 printed steps) has every interval the catalog names, and only those.
  std::vector<cvs::StepRecord> steps;
  for (int i = 0; i < 400; ++i) {
    cvs::StepRecord s;
    s.step = i;
    const double t = i == 0 ? 3.0 : 0.1 + 0.001 * ((i * 37) % 11);
    s.seconds = std::round(t * 1000) / 1000;
    s.tokens_per_device = std::round(512 / t * 1000) / 1000;
    s.tflops_per_device = std::round(50 / t * 1000) / 1000;
    s.loss = 3.0;
    steps.push_back(s);
  }
  cvs::MetricsContext two;  // a distributed run with a baseline: scaling efficiency too
  two.num_nodes = 2;
  two.distributed = true;
  two.scaling_baseline.tokens_per_sec_total = 5000;
  const auto long_run = cvs::compute_metrics(steps, {}, two);
  std::set<std::string> interval;
  for (const auto& [name, i] : long_run.steady.intervals) interval.insert(name);
  for (const auto& spec : cvs::metric_catalog())
    EXPECT_EQ(spec.interval, interval.count(std::string(spec.name)) == 1) << spec.name;
  EXPECT_EQ(cvs::find_metric("checkpoint_save_seconds")->gated_by, cvs::GatedBy::CheckpointResume);
  EXPECT_EQ(cvs::find_metric("final_loss")->gated_by, cvs::GatedBy::TestMetric);
  EXPECT_EQ(cvs::better_direction("tokens_per_sec_total"), cvs::Better::Higher);
  EXPECT_EQ(cvs::better_direction("step_time_p95_ms"), cvs::Better::Lower);
  EXPECT_EQ(cvs::better_direction("initial_loss"), cvs::Better::Neither);
  EXPECT_EQ(cvs::find_metric("no_such_metric"), nullptr);
}

// A real 4-device CPU run (cpu_jaxmaxtext_tiny_4dev_single.json, BS=2, SL=128): MaxText's
// Tokens/s/device is per device (2 x 128 = 256 tokens a device a step over the step's seconds), its
// total_weights the 4 devices' 1024 tokens; tokens/s total is 4 x per device.
TEST(Metrics, AFourDeviceLogIsPerDeviceAndItsTotalIsFourTimesThat) {
  const auto r =
      cvs::scan_log_file(cvs::test::data("logs/cpu_4dev_bs2_100steps.log"), cvs::default_error_patterns());
  ASSERT_EQ(r.steps.size(), 100u);
  for (const auto& s : r.steps) {
    EXPECT_EQ(*s.total_weights, 1024.0) << s.step;
    // rates and seconds are printed with 3 decimals: 256 tokens within the rounding of seconds
    EXPECT_NEAR(*s.tokens_per_device * *s.seconds, 256.0, *s.tokens_per_device * 0.0005 + 1e-9) << s.step;
  }
  cvs::MetricsContext ctx;
  ctx.gpus_per_node = 4;
  const auto m = cvs::compute_metrics(r.steps, r.evals, ctx);
  EXPECT_DOUBLE_EQ(*m.get("tokens_per_sec_total"), 4 * *m.get("tokens_per_sec_per_gpu"));
  EXPECT_DOUBLE_EQ(*m.get("initial_loss"), 6.081);
  ASSERT_TRUE(m.steady.intervals.count("tokens_per_sec_total"));
  const auto& tot = m.steady.intervals.at("tokens_per_sec_total");
  const auto& per = m.steady.intervals.at("tokens_per_sec_per_gpu");
  EXPECT_NEAR(tot.estimate, 4 * per.estimate, 1e-6 * tot.estimate);
}

// Too few step records for a speed figure: an enforced speed gate is undecided (INCONCLUSIVE, which
// on_inconclusive fail fails), never a pass by absence.
TEST(Metrics, ASpeedGateWithNoFigureIsInconclusiveNotNotApplicable) {
  const auto m = cvs::compute_metrics({step(0, 5, 5), step(1, 1, 5), step(2, 1, 5)}, {}, {});
  ASSERT_FALSE(m.get("tokens_per_sec_per_gpu"));
  const std::vector<cvs::ThresholdSpec> cell = {
      {"tokens_per_sec_per_gpu", cvs::ThresholdKind::MinTokS, 1.0, {}, ""}};
  const auto e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true, false);
  EXPECT_EQ(e.outcome, cvs::Outcome::Inconclusive) << e.message;
  EXPECT_NE(e.message.find("no interval"), std::string::npos) << e.message;
  EXPECT_EQ(cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, false, false).outcome,
            cvs::Outcome::Record);
  EXPECT_EQ(cvs::evaluate_metric("tokens_per_sec_per_gpu", m, nullptr, true, false).outcome,
            cvs::Outcome::NA);
}
