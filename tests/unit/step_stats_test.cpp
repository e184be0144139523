// The steady-state statistics behind interval verdicts, on synthetic series whose answers are
// known (stationary, warm-up spike, trend, heavy tail, autocorrelated) and on real MaxText logs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "cvs/config/thresholds.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/results/early_stop.hpp"
#include "cvs/results/evaluation.hpp"
#include "cvs/results/metrics.hpp"
#include "cvs/results/step_stats.hpp"
#include "test_helpers.hpp"

namespace {

std::vector<double> normal_series(std::size_t n, double mean, double sd, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// AR(1): x_t = mean + phi (x_{t-1} - mean) + e_t.
std::vector<double> ar1_series(std::size_t n, double mean, double phi, double sd, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> e(0, sd);
  std::vector<double> v(n);
  double prev = mean;
  for (auto& x : v) x = prev = mean + phi * (prev - mean) + e(rng);
  return v;
}

// Step records with the given step times (s) and a fixed amount of work per step.
std::vector<cvs::StepRecord> steps_from(const std::vector<double>& secs, double tokens_per_step = 2000) {
  std::vector<cvs::StepRecord> s;
  for (std::size_t i = 0; i < secs.size(); ++i) {
    cvs::StepRecord r;
    r.step = static_cast<long long>(i);
    r.seconds = secs[i];
    r.tokens_per_device = tokens_per_step / secs[i];
    r.tflops_per_device = 0.5 / secs[i];
    r.loss = 5.0 - 0.01 * static_cast<double>(i);
    s.push_back(r);
  }
  return s;
}

}  // namespace

TEST(StepStats, StationarySeriesHasNoWarmupAndItsIntervalHoldsTheMean) {
  const auto x = normal_series(400, 100, 5, 1);
  const auto cut = cvs::mser5_truncation(x);
  ASSERT_TRUE(cut);
  // On pure noise MSER may still cut a little (its cost there is lost samples, not bias).
  EXPECT_LE(*cut, 100u) << "a stationary series loses at most its first quarter";
  const auto bm = cvs::batch_means(x, 0.95);
  ASSERT_TRUE(bm);
  EXPECT_EQ(bm->batches, 20u);
  EXPECT_LT(bm->ci.lo, 100.0);
  EXPECT_GT(bm->ci.hi, 100.0);
  EXPECT_LT(bm->ci.hi - bm->ci.lo, 2.5) << "about 2 x 2.09 x 5 / sqrt(400)";
}

TEST(StepStats, BatchMeansIntervalsCoverTheMeanAtAboutTheirLevel) {
  int covered = 0;
  for (unsigned seed = 0; seed < 200; ++seed) {
    const auto bm = cvs::batch_means(normal_series(100, 50, 4, seed + 100), 0.95);
    covered += bm->ci.lo <= 50 && 50 <= bm->ci.hi;
  }
  EXPECT_GE(covered, 180) << "95 % intervals: about 190 of 200";
  EXPECT_LE(covered, 199);
}

TEST(StepStats, WarmupSpikeIsCutWhereItEnds) {
  auto x = normal_series(200, 100, 3, 2);
  for (std::size_t i = 0; i < 12; ++i) x[i] = 1000 - 60.0 * static_cast<double>(i);  // compile + ramp
  const auto cut = cvs::mser5_truncation(x);
  ASSERT_TRUE(cut);
  EXPECT_GE(*cut, 10u);
  EXPECT_LE(*cut, 20u);
}

TEST(StepStats, TrendingSeriesGetsIntervalsCoveringTheTrend) {
  std::vector<double> x;
  for (int i = 0; i < 100; ++i) x.push_back(100 + 2.0 * i);  // a GPU clocking down, say
  const auto d = cvs::drift(x);
  ASSERT_TRUE(d);
  EXPECT_GT(d->relative, 0.5);
  EXPECT_NEAR(d->start, 100 + 2.0 * 4.5, 1.0) << "the fitted first batch (10 of 10 steps)";
  EXPECT_NEAR(d->end, 100 + 2.0 * 94.5, 1.0);
  const auto s = cvs::steady_state(steps_from(x), 1, 0.95);
  EXPECT_GE(s.n, 50u) << "MSER truncates in the first half at most";
  ASSERT_TRUE(s.drift) << "the kept half still drifts";
  EXPECT_GT(s.drift->relative, cvs::kMaxDrift);
  EXPECT_NE(s.note.find("drifts"), std::string::npos) << s.note;
  // The widened intervals reach the trend line's ends (the plain batch-means ones would not).
  const auto& ms = s.intervals.at("step_time_mean_ms");
  EXPECT_LE(ms.lo, 1000 * s.drift->start + 1e-6);
  EXPECT_GE(ms.hi, 1000 * s.drift->end - 1e-6);
  const auto& tok = s.intervals.at("tokens_per_sec_per_gpu");
  EXPECT_LE(tok.lo, 2000 / s.drift->end * 1.001);
  EXPECT_GE(tok.hi, 2000 / s.drift->start * 0.999);
  // Noise of the same size without a trend is no drift.
  const auto noise = cvs::drift(normal_series(100, 200, 30, 9));
  EXPECT_LT(std::fabs(noise->relative), cvs::kMaxDrift);
  EXPECT_FALSE(cvs::steady_state(steps_from(normal_series(100, 0.2, 0.03, 9)), 1, 0.95).drift);
}

TEST(StepStats, HeavyTailKeepsTheMedianIntervalTightAndTheMeanIntervalHonest) {
  auto x = normal_series(400, 100, 2, 3);
  for (std::size_t i = 7; i < x.size(); i += 20) x[i] = 300;  // 5 % of steps flush a checkpoint
  const auto p50 = cvs::bootstrap_percentile(x, 50, 0.95);
  ASSERT_TRUE(p50);
  EXPECT_LT(p50->lo, 100.4);
  EXPECT_GT(p50->hi, 99.6);
  EXPECT_LT(p50->hi - p50->lo, 2.0);
  const auto bm = cvs::batch_means(x, 0.95);
  const double mean = 0.95 * 100 + 0.05 * 300;
  EXPECT_LT(bm->ci.lo, mean);
  EXPECT_GT(bm->ci.hi, mean);
  // The same data give the same interval: the bootstrap's seed is fixed.
  const auto again = cvs::bootstrap_percentile(x, 50, 0.95);
  EXPECT_EQ(p50->lo, again->lo);
  EXPECT_EQ(p50->hi, again->hi);
}

// A million steps cost what 20 000 do (m-out-of-n resamples), and the interval is still the
// right size: about the full bootstrap's width at n (the normal median's standard error is
// 1.2533 sd / sqrt(n)), holding the true median.
TEST(StepStats, PercentileIntervalOfAMillionStepsIsFastAndTheRightSize) {
  const auto x = normal_series(1000000, 100, 2, 11);
  const auto t0 = std::chrono::steady_clock::now();
  const auto p50 = cvs::bootstrap_percentile(x, 50, 0.95);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(p50);
  EXPECT_LT(p50->lo, 100.0);
  EXPECT_GT(p50->hi, 100.0);
  const double se = 1.2533 * 2 / std::sqrt(1e6);
  EXPECT_GT(p50->hi - p50->lo, 2 * 1.96 * se * 0.5);
  EXPECT_LT(p50->hi - p50->lo, 2 * 1.96 * se * 2.0);
  // Same cost as a 20 000-step series, measured side by side (no absolute time).
  const auto y = normal_series(cvs::kBootstrapMaxResample, 100, 2, 12);
  const auto t1 = std::chrono::steady_clock::now();
  (void)cvs::bootstrap_percentile(y, 50, 0.95);
  const double small = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  EXPECT_LT(secs, small * 3 + 0.5) << "1M: " << secs << " s, 20k: " << small << " s";
}

TEST(StepStats, AutocorrelationWidensTheIntervalBeyondTheNaiveOne) {
  const auto x = ar1_series(900, 100, 0.9, 1, 4);
  EXPECT_NEAR(cvs::lag1_autocorrelation(x), 0.9, 0.06);
  const auto bm = cvs::batch_means(x, 0.95);
  ASSERT_TRUE(bm);
  double m = 0, ss = 0;
  for (double v : x) m += v;
  m /= static_cast<double>(x.size());
  for (double v : x) ss += (v - m) * (v - m);
  const double naive_half =
      1.96 * std::sqrt(ss / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()));
  EXPECT_GT((bm->ci.hi - bm->ci.lo) / 2, 2.5 * naive_half)
      << "sqrt((1 + phi) / (1 - phi)) = 4.4 in theory; an iid interval would give false verdicts";
  EXPECT_LT(bm->ci.lo, 100.0);
  EXPECT_GT(bm->ci.hi, 100.0);
}

TEST(StepStats, ThroughputIntervalIsWorkOverTimeAndScalesToTheTotal) {
  auto secs = normal_series(60, 0.5, 0.01, 5);
  secs[0] = 20;  // compilation
  const auto s = cvs::steady_state(steps_from(secs), 8, 0.95);
  ASSERT_TRUE(s.found) << s.why;
  EXPECT_GE(s.first, 1u);
  const auto& tok = s.intervals.at("tokens_per_sec_per_gpu");
  EXPECT_LT(tok.lo, 4000.0);
  EXPECT_GT(tok.hi, 4000.0);
  EXPECT_LT(tok.lo, tok.estimate);
  EXPECT_GT(tok.hi, tok.estimate);
  const auto& total = s.intervals.at("tokens_per_sec_total");
  EXPECT_DOUBLE_EQ(total.lo, tok.lo * 8);
  EXPECT_DOUBLE_EQ(total.hi, tok.hi * 8);
  const auto& ms = s.intervals.at("step_time_mean_ms");
  EXPECT_LT(ms.lo, 500.0);
  EXPECT_GT(ms.hi, 500.0);
  EXPECT_TRUE(s.intervals.count("step_time_p95_ms"));
  EXPECT_TRUE(s.intervals.count("tflops_per_sec_per_gpu"));
}

TEST(StepStats, TooFewStepsGiveNoInterval) {
  const auto s = cvs::steady_state(steps_from({9.0, 0.5, 0.5, 0.5}), 1, 0.95);
  EXPECT_FALSE(s.found);
  EXPECT_TRUE(s.intervals.empty());
}

namespace {
cvs::ThresholdSpec gate(const std::string& metric, cvs::ThresholdKind k, double v) {
  cvs::ThresholdSpec s;
  s.metric = metric;
  s.kind = k;
  s.value = v;
  return s;
}
}  // namespace

TEST(IntervalVerdict, PassFailAndInconclusiveFollowWhereTheIntervalLies) {
  auto secs = normal_series(100, 0.5, 0.02, 6);
  secs[0] = 10;
  const auto m = cvs::compute_metrics(steps_from(secs), {}, {});
  const auto& tok = m.steady.intervals.at("tokens_per_sec_per_gpu");
  using K = cvs::ThresholdKind;
  using O = cvs::Outcome;
  std::vector<cvs::ThresholdSpec> cell = {gate("tokens_per_sec_per_gpu", K::MinTokS, tok.lo * 0.9)};
  auto e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
  EXPECT_EQ(e.outcome, O::Pass) << e.message;
  ASSERT_TRUE(e.interval);
  ASSERT_TRUE(e.margin_pct);
  EXPECT_GT(*e.margin_pct, 0);
  cell[0].value = (tok.lo + tok.hi) / 2;  // inside the interval
  e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
  EXPECT_EQ(e.outcome, O::Inconclusive) << e.message;
  EXPECT_NE(e.message.find("straddles"), std::string::npos);
  cell[0].value = tok.hi * 1.1;
  e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
  EXPECT_EQ(e.outcome, O::Fail) << e.message;
  EXPECT_LT(*e.margin_pct, 0);
  // Not enforced: recorded, saying what it would have been.
  e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, false);
  EXPECT_EQ(e.outcome, O::Record);
  EXPECT_NE(e.message.find("would be FAIL"), std::string::npos) << e.message;
  // max on step time mirrors min.
  const auto& p95 = m.steady.intervals.at("step_time_p95_ms");
  std::vector<cvs::ThresholdSpec> mx = {gate("step_time_p95_ms", K::MaxMs, p95.hi * 1.2)};
  EXPECT_EQ(cvs::evaluate_metric("step_time_p95_ms", m, &mx, true).outcome, O::Pass);
  mx[0].value = p95.lo * 0.8;
  EXPECT_EQ(cvs::evaluate_metric("step_time_p95_ms", m, &mx, true).outcome, O::Fail);
}

TEST(IntervalVerdict, ADriftingRunIsDecidedOnlyWhenTheWholeTrendClearsTheGate) {
  std::vector<double> x;
  for (int i = 0; i < 60; ++i) x.push_back(0.2 + 0.01 * i);  // 10000 tok/s falling to 2532
  const auto m = cvs::compute_metrics(steps_from(x), {}, {});
  ASSERT_TRUE(m.steady.drift);
  // Between the kept window's ends (about 3900 and 2560 tok/s), above its plain interval's top.
  std::vector<cvs::ThresholdSpec> cell = {gate("tokens_per_sec_per_gpu", cvs::ThresholdKind::Min, 3600)};
  auto e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
  EXPECT_EQ(e.outcome, cvs::Outcome::Inconclusive) << e.message;
  EXPECT_NE(e.message.find("widened for a drift"), std::string::npos) << e.message;
  cell[0].value = 1000;  // below the whole trend
  EXPECT_EQ(cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true).outcome, cvs::Outcome::Pass);
  // Too few steps: no interval, never a PASS.
  const auto few = cvs::compute_metrics(steps_from({9.0, 0.5, 0.5, 0.5}), {}, {});
  e = cvs::evaluate_metric("tokens_per_sec_per_gpu", few, &cell, true);
  EXPECT_EQ(e.outcome, cvs::Outcome::Inconclusive) << e.message;
  EXPECT_NE(e.message.find("no interval"), std::string::npos) << e.message;
}

TEST(IntervalVerdict, SpeedMetricWithoutAGateSaysUncalibrated) {
  const auto m = cvs::compute_metrics(steps_from(normal_series(40, 0.5, 0.01, 7)), {}, {});
  std::vector<cvs::ThresholdSpec> cell = {gate("step_time_p95_ms", cvs::ThresholdKind::Info, 0)};
  for (const char* metric : {"tokens_per_sec_per_gpu", "step_time_p95_ms"}) {
    const auto e = cvs::evaluate_metric(metric, m, &cell, true);
    EXPECT_EQ(e.outcome, cvs::Outcome::Record);
    EXPECT_NE(e.message.find("uncalibrated on this machine: run `cvs calibrate`"), std::string::npos)
        << e.message;
  }
  // A loss metric without a gate is only recorded.
  const auto e = cvs::evaluate_metric("final_loss", m, &cell, true);
  EXPECT_EQ(e.message.find("uncalibrated"), std::string::npos);
}

TEST(StepStats, RealCpuLogsHaveASteadyStateAndIntervalsAroundTheirFigures) {
  for (const char* log :
       {"logs/cpu_tiny_12steps.log", "logs/cpu_2proc_rank0.log", "logs/cpu_bs4_30steps.log"}) {
    cvs::LogScanner sc(cvs::default_error_patterns());
    sc.feed(cvs::test::read_file(cvs::test::data(log)));
    sc.finish();
    const auto m = cvs::compute_metrics(sc.result().steps, {}, {});
    ASSERT_TRUE(m.steady.found) << log << ": " << m.steady.why;
    EXPECT_GE(m.steady.first, 1u) << "step 0 compiles";
    const auto& tok = m.steady.intervals.at("tokens_per_sec_per_gpu");
    EXPECT_LE(tok.lo, tok.estimate) << log;
    EXPECT_GE(tok.hi, tok.estimate) << log;
    EXPECT_GT(tok.lo, 0) << log;
    const auto& ms = m.steady.intervals.at("step_time_mean_ms");
    EXPECT_LE(ms.lo, ms.estimate);
    EXPECT_GE(ms.hi, ms.estimate);
  }
}

// ---- stop early once decisive, extend when not --------------------------------------------

TEST(EarlyStop, LooksDoubleUpToTheCapAndSpendTheErrorOverThem) {
  auto p = cvs::EarlyStopPlan::make(200, 400, 10, false, 0.95);
  EXPECT_EQ(p.looks, (std::vector<long long>{20, 40, 80, 160, 320, 400}));
  EXPECT_EQ(p.first_stop, 0);
  EXPECT_NEAR(p.per_look_confidence, 1 - 0.05 / 6, 1e-12);
  // Gates beyond speed (loss): no stop before the configured steps, which become a look.
  p = cvs::EarlyStopPlan::make(30, 120, 10, true, 0.95);
  EXPECT_EQ(p.first_stop, 30);
  EXPECT_EQ(p.looks, (std::vector<long long>{40, 80, 120}));
  // A cap below the steps means no extension.
  EXPECT_EQ(cvs::EarlyStopPlan::make(50, 20, 10, false, 0.95).cap, 50);
}

TEST(EarlyStop, StopsAtTheFirstLookWhereEveryGateIsDecisive) {
  auto secs = normal_series(400, 0.5, 0.01, 11);
  secs[0] = 10;
  const auto all = steps_from(secs);  // 4000 tok/s
  auto prefix = [&](std::size_t n) { return std::vector<cvs::StepRecord>(all.begin(), all.begin() + n); };
  using K = cvs::ThresholdKind;
  const auto plan = cvs::EarlyStopPlan::make(200, 400, 10, false, 0.95);
  cvs::EarlyStopper clear(plan, {gate("tokens_per_sec_per_gpu", K::MinTokS, 3000)}, 1);
  EXPECT_FALSE(clear(prefix(19))) << "before the first look";
  EXPECT_EQ(clear.decided_at(), 0u);
  EXPECT_TRUE(clear(prefix(20)));
  EXPECT_EQ(clear.looks_taken(), 1);
  EXPECT_EQ(clear.decided_at(), 20u);
  EXPECT_NE(clear.reason().find("tokens_per_sec_per_gpu PASS"), std::string::npos) << clear.reason();
  // A decisive FAIL stops too: the verdict is known.
  cvs::EarlyStopper fails(plan, {gate("tokens_per_sec_per_gpu", K::MinTokS, 9000)}, 1);
  EXPECT_TRUE(fails(prefix(25)));
  EXPECT_NE(fails.reason().find("FAIL"), std::string::npos);
  // A threshold at the true value straddles at every look: the run goes on to the cap.
  cvs::EarlyStopper straddles(plan, {gate("tokens_per_sec_per_gpu", K::MinTokS, 4000)}, 1);
  int stops = 0;
  for (std::size_t n = 10; n <= 400; n += 10) stops += straddles(prefix(n));
  EXPECT_EQ(stops, 0);
  EXPECT_EQ(straddles.looks_taken(), 5) << "every planned look but the cap, where the run ends by itself";
}

TEST(EarlyStop, OnlySpeedGatesAreDecidedEarly) {
  using K = cvs::ThresholdKind;
  const std::vector<cvs::ThresholdSpec> cell = {gate("tokens_per_sec_per_gpu", K::MinTokS, 1),
                                                gate("step_time_p95_ms", K::Info, 0),
                                                gate("final_loss", K::Max, 9)};
  const auto g = cvs::speed_gates(&cell);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].metric, "tokens_per_sec_per_gpu");
  EXPECT_TRUE(cvs::gates_beyond_speed(&cell));
  const std::vector<cvs::ThresholdSpec> speed_only = {cell[0], cell[1]};
  EXPECT_FALSE(cvs::gates_beyond_speed(&speed_only));
}
