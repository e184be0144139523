// The steady-state statistics behind interval verdicts: known answers computed independently
// (tests/unit/known_answers.py, numpy/scipy), the cases the coverage study cannot name one by one
// (a quantized series, a short run, rampup, a drift), and real MaxText logs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cvs/config/thresholds.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/run_figures.hpp"
#include "cvs/statistics/step_stats.hpp"
#include "cvs/verdicts/early_stop.hpp"
#include "cvs/verdicts/evaluation.hpp"
#include "test_helpers.hpp"

using cvs::test::threshold_spec;

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

double printed(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

// Step records with the given step times (s) and a fixed amount of work per step, at full precision
// (printed = false) or printed with MaxText's 3 decimals.
std::vector<cvs::StepRecord> steps_from(const std::vector<double>& secs, double tokens_per_step = 2000,
                                        bool print = false) {
  std::vector<cvs::StepRecord> s;
  for (std::size_t i = 0; i < secs.size(); ++i) {
    cvs::StepRecord r;
    r.step = static_cast<long long>(i);
    const auto p = [&](double v) { return print ? printed(v) : v; };
    r.seconds = p(secs[i]);
    r.tokens_per_device = p(tokens_per_step / secs[i]);
    r.tflops_per_device = p(0.5 / secs[i]);
    r.loss = 5.0 - 0.01 * static_cast<double>(i);
    s.push_back(r);
  }
  return s;
}

// The known-answer series of tests/unit/known_answers.py.
std::vector<double> known_series() {
  std::vector<double> x = {400.0, 3.0, 25.0, 14.0};
  for (int i = 0; i < 40; ++i) x.push_back(10 + 0.05 * ((i * 37) % 17 - 8) + 0.03 * ((i * 11) % 7));
  return x;
}

void expect_rel(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-9 * std::fabs(want)) << what;
}

}  // namespace

// ---- known answers (tests/unit/known_answers.py) ------------------------------------------

TEST(KnownAnswers, WarmupEndsAfterTheLeadingStepsOutsideTheSteadyBand) {
  const auto x = known_series();
  EXPECT_EQ(cvs::warmup_end(x), 4u) << "the compile step, step 1, and the two warm-up steps 25 and 14";
  std::vector<double> quiet = x;
  quiet[2] = quiet[3] = 10.0;
  EXPECT_EQ(cvs::warmup_end(quiet), 2u) << "nothing but the compile cut when the warm-up is over";
}

TEST(KnownAnswers, MeanIntervalMatchesTheIndependentComputation) {
  const auto x = known_series();
  const std::vector<double> w(x.begin() + 4, x.end());
  const auto mi = cvs::mean_interval(w, 0.95);
  ASSERT_TRUE(mi.ci) << mi.why;
  expect_rel(mi.lag1, 0.18139573744094536, "lag1");
  expect_rel(mi.lag1_upper, 0.47372531269461693, "lag1_upper");
  expect_rel(mi.tau_upper, 2.800296780831972, "tau_upper");
  EXPECT_EQ(mi.batches, 6u);
  EXPECT_EQ(mi.batch_size, 6u);
  expect_rel(mi.ci->estimate, 10.104444444444445, "estimate");
  expect_rel(mi.ci->lo, 10.04668087823031, "lo");
  expect_rel(mi.ci->hi, 10.161795626047715, "hi");
}

TEST(KnownAnswers, PercentileIntervalIsTheOrderStatisticsAtTheBinomialRanks) {
  const auto x = known_series();
  const std::vector<double> w(x.begin() + 4, x.end());
  const auto p50 = cvs::percentile_interval(w, 50, 0.95, 2.800296780831972);
  ASSERT_TRUE(p50);
  expect_rel(p50->estimate, 10.08, "p50");
  expect_rel(p50->lo, 9.819999999999999, "p50 lo (rank 8)");
  expect_rel(p50->hi, 10.34, "p50 hi (rank 31)");
  EXPECT_FALSE(cvs::percentile_interval(w, 95, 0.95, 2.800296780831972))
      << "the p95 of 40 steps has no upper bound at 95 %";
}

TEST(KnownAnswers, TokensPerStepIsWhatEveryPrintedStepAllows) {
  // True 12.4, 12.35, 12.45 ms of 512 tokens, every one printed 0.012 s.
  const auto k = cvs::work_per_step({0.012, 0.012, 0.012}, {41290.323, 41457.49, 41124.498}, 1e-3, 1e-3);
  ASSERT_TRUE(k);
  expect_rel(k->lo, 476.76112924999995, "lo");
  expect_rel(k->hi, 514.05623125, "hi");
  EXPECT_FALSE(cvs::work_per_step({0.012, 0.024}, {41290.323, 41290.323}, 1e-3, 1e-3))
      << "two steps that cannot have done the same work";
}

// ---- what the study does not name one by one -----------------------------------------------

namespace {

// The case: true steps 12.4 +- 0.08 ms, printed 0.012 almost every time.
std::vector<double> quantized_run(std::size_t n, unsigned seed) {
  auto t = normal_series(n, 0.0124, 0.00008, seed);
  t[0] = 1.9;    // compile
  t[1] = 0.004;  // MaxText's step 1
  return t;
}

}  // namespace

TEST(StepStats, AQuantizedRunGetsAnIntervalHoldingItsTrueMeanAndNoFalsePass) {
  const auto steps = steps_from(quantized_run(80, 3), 512, true);
  std::size_t printed_12 = 0;
  for (const auto& r : steps) printed_12 += *r.seconds == 0.012;
  ASSERT_GE(printed_12, 60u) << "the seconds say 0.012 nearly always";
  const auto m = cvs::compute_metrics(steps, {}, {});
  EXPECT_EQ(m.steady.source, cvs::TimeSource::TokensRate);
  const auto& ms = m.steady.intervals.at("step_time_mean_ms");
  EXPECT_LE(ms.lo, 12.4);
  EXPECT_GE(ms.hi, 12.4);
  EXPECT_GT(ms.hi - ms.lo, 0.0) << "never a zero-width interval";
  EXPECT_LT(ms.hi - ms.lo, 0.2) << "the tokens rate and the compile step pin it to a fraction of a ms";
  std::vector<cvs::ThresholdSpec> cell = {
      threshold_spec("step_time_mean_ms", cvs::ThresholdKind::MaxMs, 12.2)};
  const auto e = cvs::evaluate_metric("step_time_mean_ms", m, &cell, true);
  EXPECT_NE(e.outcome, cvs::Outcome::Pass) << e.message;
  EXPECT_EQ(e.outcome, cvs::Outcome::Fail) << e.message;
  // Without the tokens rate only the printed seconds speak: the interval keeps half their
  // resolution on each side, so the gate is INCONCLUSIVE, never PASS.
  auto bare = steps;
  for (auto& r : bare) r.tokens_per_device.reset(), r.tflops_per_device.reset();
  const auto b = cvs::compute_metrics(bare, {}, {});
  EXPECT_EQ(b.steady.source, cvs::TimeSource::PrintedSeconds);
  const auto& bm = b.steady.intervals.at("step_time_mean_ms");
  EXPECT_LE(bm.lo, 12.4);
  EXPECT_GE(bm.hi, 12.4);
  EXPECT_EQ(cvs::evaluate_metric("step_time_mean_ms", b, &cell, true).outcome, cvs::Outcome::Inconclusive);
}

TEST(StepStats, TooFewStepsAreInconclusiveWithTheReasonAndTheStepsNeeded) {
  auto secs = normal_series(14, 0.5, 0.01, 4);
  secs[0] = 20;
  const auto m = cvs::compute_metrics(steps_from(secs), {}, {});
  EXPECT_TRUE(m.steady.found);
  EXPECT_TRUE(m.steady.intervals.empty());
  EXPECT_NE(m.steady.why.find("12 steady-state steps: too few for an interval; run at least 25"),
            std::string::npos)
      << m.steady.why;
  std::vector<cvs::ThresholdSpec> cell = {
      threshold_spec("tokens_per_sec_per_gpu", cvs::ThresholdKind::MinTokS, 1)};
  const auto e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
  EXPECT_EQ(e.outcome, cvs::Outcome::Inconclusive);
  EXPECT_NE(e.message.find("too few"), std::string::npos) << e.message;
}

TEST(StepStats, StronglyCorrelatedStepsNameTheStepsTheyWouldNeed) {
  auto secs = ar1_series(60, 0.5, 0.95, 0.01, 5);
  secs[0] = 20;
  const auto s = cvs::steady_state(steps_from(secs), 1, 0.95);
  EXPECT_TRUE(s.intervals.empty());
  EXPECT_NE(s.why.find("too few steps for the correlation seen"), std::string::npos) << s.why;
  EXPECT_GT(s.lag1, 0.6);
}

TEST(StepStats, TheCompileStepAndRampupStepsAreNeverInTheWindow) {
  auto secs = normal_series(80, 0.5, 0.01, 6);
  secs[0] = 0.45;  // a compile step that happens to look ordinary
  auto steps = steps_from(secs);
  for (std::size_t i = 0; i < 10; ++i) {  // batch-size rampup: no rates, another batch
    steps[i].rampup = true;
    steps[i].tokens_per_device.reset();
    steps[i].tflops_per_device.reset();
  }
  const auto s = cvs::steady_state(steps, 1, 0.95);
  ASSERT_TRUE(s.found);
  EXPECT_GE(s.first_step, 12) << "rampup steps 0-9 out, then the compile cut of the first two after them";
  EXPECT_TRUE(s.intervals.count("tflops_per_sec_per_gpu")) << "TFLOP/s is on every windowed step";
  EXPECT_FALSE(cvs::is_timed(steps[3]));
}

TEST(StepStats, ABoundAtOrBelowZeroIsNeverPrinted) {
  // Step times that swing wildly: the mean's interval would reach below 0.
  std::vector<double> secs = {5.0, 1.0};
  for (int i = 0; i < 40; ++i) secs.push_back(i % 8 == 0 ? 4.0 : 0.001 + 0.0001 * i);
  const auto s = cvs::steady_state(steps_from(secs, 2000, false), 1, 0.95);
  for (const auto& [name, i] : s.intervals) EXPECT_GT(i.lo, 0) << name;
}

TEST(KnownAnswers, DriftBandHoldsBothEndsOfTheFittedTrend) {
  std::vector<double> x;
  for (int i = 0; i < 100; ++i) x.push_back(10 + 0.03 * i + 0.05 * ((i * 37) % 11 - 5));
  const auto d = cvs::drift(x, 0.95);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->batches, 10u);
  EXPECT_EQ(d->batch_size, 10u);
  expect_rel(d->start, 9.99255, "start at the first step");
  expect_rel(d->end, 12.97245, "end at the last step");
  expect_rel(d->relative, 0.2595166557805357, "relative");
  expect_rel(d->t, 173.78243102613618, "t");
  expect_rel(d->lo, 9.969691752184483, "lo");
  expect_rel(d->hi, 12.995308247815517, "hi");
}

TEST(StepStats, ADriftingWindowsIntervalsSpanTheTrendAndSayWhy) {
  std::vector<double> x = {5.0, 1.0};
  for (int i = 0; i < 400; ++i) x.push_back(0.1 + 0.0005 * i + 0.01 * ((i * 37) % 11 - 5));  // clocking down
  const auto s = cvs::steady_state(steps_from(x), 1, 0.95);
  ASSERT_TRUE(s.drift) << s.why;
  EXPECT_GT(s.drift->relative, cvs::kMaxDrift);
  EXPECT_NE(cvs::drift_note(*s.drift, s.n).find("drifts +"), std::string::npos);
  // The step time's interval holds the trend's level at the window's first step and at its last
  // (the warm-up rule has cut the early, fastest steps), the tokens' interval the same levels,
  // the p50's interval both ends' medians.
  const auto level = [](long long step) { return 0.1 + 0.0005 * static_cast<double>(step - 2); };
  const double fast = level(s.first_step), slow = level(401);
  ASSERT_GT(slow / fast, 1 + cvs::kMaxDrift);
  const auto& secs = s.intervals.at("step_time_seconds");
  EXPECT_LT(secs.lo, fast);
  EXPECT_GT(secs.hi, slow);
  EXPECT_NEAR(secs.estimate, (fast + slow) / 2, 0.01);
  const auto& tok = s.intervals.at("tokens_per_sec_per_gpu");
  EXPECT_LT(tok.lo, 2000 / slow);
  EXPECT_GT(tok.hi, 2000 / fast);
  const auto& p50 = s.intervals.at("step_time_p50_ms");
  EXPECT_LT(p50.lo, 1e3 * fast);
  EXPECT_GT(p50.hi, 1e3 * slow);
  // The same noise without the trend: no drift, and a far narrower interval.
  std::vector<double> flat = {5.0, 1.0};
  for (int i = 0; i < 400; ++i) flat.push_back(0.2 + 0.01 * ((i * 37) % 11 - 5));
  const auto f = cvs::steady_state(steps_from(flat), 1, 0.95);
  EXPECT_FALSE(f.drift);
  ASSERT_TRUE(f.intervals.count("step_time_seconds")) << f.why;
  EXPECT_LT(f.intervals.at("step_time_seconds").hi - f.intervals.at("step_time_seconds").lo, 0.02);
}

TEST(StepStats, AutocorrelationWidensTheIntervalBeyondTheNaiveOne) {
  const auto x = ar1_series(900, 100, 0.9, 1, 4);
  EXPECT_NEAR(cvs::lag1_autocorrelation(x), 0.9, 0.06);
  const auto mi = cvs::mean_interval(x, 0.95);
  ASSERT_TRUE(mi.ci) << mi.why;
  double m = 0, ss = 0;
  for (double v : x) m += v;
  m /= static_cast<double>(x.size());
  for (double v : x) ss += (v - m) * (v - m);
  const double naive_half =
      1.96 * std::sqrt(ss / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()));
  EXPECT_GT((mi.ci->hi - mi.ci->lo) / 2, 2.5 * naive_half)
      << "sqrt((1 + phi) / (1 - phi)) = 4.4 in theory; an iid interval would give false verdicts";
  EXPECT_GE(mi.batch_size, 2 * 19u) << "batches of at least 2 tau";
  EXPECT_LT(mi.ci->lo, 100.0);
  EXPECT_GT(mi.ci->hi, 100.0);
}

TEST(StepStats, RealCpuLogsHaveASteadyStateAndIntervalsAroundTheirFigures) {
  for (const char* log : {"logs/cpu_2proc_rank0.log", "logs/cpu_bs4_30steps.log"}) {
    cvs::LogScanner sc(cvs::default_error_patterns());
    sc.feed(cvs::test::read_file(cvs::test::data(log)));
    sc.finish();
    const auto m = cvs::compute_metrics(sc.result().steps, {}, {});
    ASSERT_TRUE(m.steady.found) << log << ": " << m.steady.why;
    EXPECT_GE(m.steady.first, cvs::kCompileCut) << "step 0 compiles";
    EXPECT_EQ(m.steady.source, cvs::TimeSource::TokensRate) << log;
    ASSERT_TRUE(m.steady.tokens_per_step);
    if (m.steady.intervals.empty()) {
      EXPECT_FALSE(m.steady.why.empty()) << log;
      continue;
    }
    const auto& tok = m.steady.intervals.at("tokens_per_sec_per_gpu");
    EXPECT_LE(tok.lo, tok.estimate) << log;
    EXPECT_GE(tok.hi, tok.estimate) << log;
    EXPECT_GT(tok.lo, 0) << log;
  }
  // The 30-step log's tokens per step: 4 x 128, pinned by its printed seconds and rates.
  cvs::LogScanner sc(cvs::default_error_patterns());
  sc.feed(cvs::test::read_file(cvs::test::data("logs/cpu_bs4_30steps.log")));
  sc.finish();
  const auto s = cvs::steady_state(sc.result().steps, 1, 0.95);
  EXPECT_LE(s.tokens_per_step->lo, 512.0);
  EXPECT_GE(s.tokens_per_step->hi, 512.0);
  EXPECT_LT(s.tokens_per_step->hi - s.tokens_per_step->lo, 2.0);
}

// ---- verdicts on intervals ------------------------------------------------------------------

TEST(IntervalVerdict, PassFailAndInconclusiveFollowWhereTheIntervalLies) {
  auto secs = normal_series(100, 0.5, 0.02, 6);
  secs[0] = 10;
  const auto m = cvs::compute_metrics(steps_from(secs), {}, {});
  const auto& tok = m.steady.intervals.at("tokens_per_sec_per_gpu");
  using K = cvs::ThresholdKind;
  using O = cvs::Outcome;
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, tok.lo * 0.9)};
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
  const auto& p50 = m.steady.intervals.at("step_time_p50_ms");
  std::vector<cvs::ThresholdSpec> mx = {threshold_spec("step_time_p50_ms", K::MaxMs, p50.hi * 1.2)};
  EXPECT_EQ(cvs::evaluate_metric("step_time_p50_ms", m, &mx, true).outcome, O::Pass);
  mx[0].value = p50.lo * 0.8;
  EXPECT_EQ(cvs::evaluate_metric("step_time_p50_ms", m, &mx, true).outcome, O::Fail);
  // The p95 of 98 steps has no upper bound at 95 %: its gate says so.
  std::vector<cvs::ThresholdSpec> p95 = {threshold_spec("step_time_p95_ms", K::MaxMs, 1e6)};
  e = cvs::evaluate_metric("step_time_p95_ms", m, &p95, true);
  EXPECT_EQ(e.outcome, O::Inconclusive) << e.message;
  EXPECT_NE(e.message.find("order-statistic interval needs at least"), std::string::npos) << e.message;
}

TEST(IntervalVerdict, ADriftingRunIsDecidedOnlyByAGateTheWholeTrendClearsOrMisses) {
  std::vector<double> x = {5.0, 1.0};
  for (int i = 0; i < 200; ++i)
    x.push_back(0.2 + 0.002 * i + 0.01 * ((i * 37) % 11 - 5));  // 10000 tok/s falling to 3350
  const auto m = cvs::compute_metrics(steps_from(x), {}, {});
  ASSERT_TRUE(m.steady.drift) << m.steady.why;
  const auto O = cvs::Outcome::Pass;
  // Below the whole trend: PASS; above it: FAIL; inside it (its mean): INCONCLUSIVE. Each says the drift.
  for (auto [bound, want] :
       {std::pair{1.0, O}, std::pair{1e9, cvs::Outcome::Fail},
        std::pair{m.steady.intervals.at("tokens_per_sec_per_gpu").estimate, cvs::Outcome::Inconclusive}}) {
    std::vector<cvs::ThresholdSpec> cell = {
        threshold_spec("tokens_per_sec_per_gpu", cvs::ThresholdKind::Min, bound)};
    const auto e = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
    EXPECT_EQ(e.outcome, want) << e.message;
    EXPECT_NE(e.message.find("drifts +"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("spans the trend's start and end levels"), std::string::npos) << e.message;
  }
}

TEST(IntervalVerdict, SpeedMetricWithoutAGateSaysUncalibrated) {
  const auto m = cvs::compute_metrics(steps_from(normal_series(40, 0.5, 0.01, 7)), {}, {});
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("step_time_p95_ms", cvs::ThresholdKind::Info, 0)};
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

// ---- stop early once decisive, extend when not --------------------------------------------

TEST(EarlyStop, LooksDoubleUpToTheCapAndSpendTheErrorOverThem) {
  auto p = cvs::EarlyStopPlan::make(200, 400, 25, false, 0.95);
  EXPECT_EQ(p.looks, (std::vector<long long>{50, 100, 200, 400}));
  EXPECT_EQ(p.first_stop, 0);
  EXPECT_NEAR(p.per_look_confidence, 1 - 0.05 / 4, 1e-12);
  // Gates beyond speed (loss): no stop before the configured steps, which become a look.
  p = cvs::EarlyStopPlan::make(30, 120, 25, true, 0.95);
  EXPECT_EQ(p.first_stop, 30);
  EXPECT_EQ(p.looks, (std::vector<long long>{50, 100, 120}));
  // A cap below the steps means no extension.
  EXPECT_EQ(cvs::EarlyStopPlan::make(50, 20, 25, false, 0.95).cap, 50);
}

TEST(EarlyStop, StopsAtTheFirstLookWhereEveryGateIsDecisive) {
  auto secs = normal_series(400, 0.5, 0.01, 11);
  secs[0] = 10;
  const auto all = steps_from(secs);  // 4000 tok/s
  auto prefix = [&](std::size_t n) { return std::vector<cvs::StepRecord>(all.begin(), all.begin() + n); };
  using K = cvs::ThresholdKind;
  const auto plan = cvs::EarlyStopPlan::make(200, 400, 25, false, 0.95);
  cvs::EarlyStopper clear(plan, {threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, 3000)}, {});
  EXPECT_FALSE(clear(prefix(49))) << "before the first look";
  EXPECT_EQ(clear.decided_at(), 0u);
  EXPECT_TRUE(clear(prefix(50)));
  EXPECT_EQ(clear.looks_taken(), 1);
  EXPECT_EQ(clear.decided_at(), 50u);
  EXPECT_NE(clear.reason().find("tokens_per_sec_per_gpu PASS"), std::string::npos) << clear.reason();
  // A decisive FAIL stops too: the verdict is known.
  cvs::EarlyStopper fails(plan, {threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, 9000)}, {});
  EXPECT_TRUE(fails(prefix(55)));
  EXPECT_NE(fails.reason().find("FAIL"), std::string::npos);
  // A threshold at the true value straddles at every look: the run goes on to the cap.
  cvs::EarlyStopper straddles(plan, {threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, 4000)}, {});
  int stops = 0;
  for (std::size_t n = 10; n <= 400; n += 10) stops += straddles(prefix(n));
  EXPECT_EQ(stops, 0);
  EXPECT_EQ(straddles.looks_taken(), 3) << "every planned look but the cap, where the run ends by itself";
}

// statistics.stop_half_width_pct (certify's nodes tier): a look stops a run only once its tokens/s
// interval is that narrow, gated or not; a decisive gate alone no longer stops it.
TEST(EarlyStop, APrecisionToReachStopsARunOnlyOnceItsTokensIntervalIsThatNarrow) {
  auto secs = normal_series(400, 0.5, 0.05, 13);  // a 10 % spread step to step
  secs[0] = 10;
  const auto all = steps_from(secs);  // 4000 tok/s
  auto prefix = [&](std::size_t n) { return std::vector<cvs::StepRecord>(all.begin(), all.begin() + n); };
  auto plan = cvs::EarlyStopPlan::make(200, 400, 25, false, 0.95);
  EXPECT_FALSE(plan.looks_at_all(0)) << "no gate, no precision: nothing to look at";
  plan.max_half_width = 0.03;
  EXPECT_TRUE(plan.looks_at_all(0));
  // The interval's half-width at each look, at the looks' confidence (what the stopper sees).
  cvs::MetricsContext ctx;
  ctx.confidence = plan.per_look_confidence;
  auto half_at = [&](std::size_t n) {
    const auto iv = cvs::compute_metrics(prefix(n), {}, ctx).steady.intervals.at("tokens_per_sec_per_gpu");
    return (iv.hi - iv.lo) / 2 / iv.estimate;
  };
  ASSERT_GT(half_at(50), 0.03) << "the first look is too wide for the test to mean anything";
  std::size_t expected = 0;
  for (std::size_t look : {50, 100, 200})
    if (!expected && half_at(look) <= 0.03) expected = look;
  ASSERT_GT(expected, 50u);
  cvs::EarlyStopper alone(plan, {}, {});
  std::size_t stopped = 0;
  for (std::size_t n = 10; n <= 400 && !stopped; n += 10)
    if (alone(prefix(n))) stopped = n;
  EXPECT_EQ(stopped, expected);
  EXPECT_EQ(alone.decided_at(), expected);
  EXPECT_NE(alone.reason().find("precise enough after"), std::string::npos) << alone.reason();
  EXPECT_NE(alone.reason().find("tokens_per_sec_per_gpu +-"), std::string::npos) << alone.reason();
  // A gate decisive at the first look (PASS far below 4000 tok/s) waits for the precision too.
  using K = cvs::ThresholdKind;
  const auto gate = threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, 1000);
  cvs::EarlyStopper without(cvs::EarlyStopPlan::make(200, 400, 25, false, 0.95), {gate}, {});
  EXPECT_TRUE(without(prefix(50)));
  cvs::EarlyStopper with(plan, {gate}, {});
  EXPECT_FALSE(with(prefix(50)));
  stopped = 0;
  for (std::size_t n = 60; n <= 400 && !stopped; n += 10)
    if (with(prefix(n))) stopped = n;
  EXPECT_EQ(stopped, expected);
  EXPECT_NE(with.reason().find("every speed gate decisive after"), std::string::npos) << with.reason();
  EXPECT_NE(with.reason().find("tokens_per_sec_per_gpu PASS, tokens_per_sec_per_gpu +-"), std::string::npos)
      << with.reason();
}

// Scaling efficiency is a speed gate like the others: decided at a look (it needs the run's
// nodes and baseline, which the stopper's context carries), on its interval.
TEST(EarlyStop, AScalingEfficiencyGateIsDecidedAtALook) {
  auto secs = normal_series(200, 0.5, 0.01, 12);
  secs[0] = 10;
  const auto all = steps_from(secs);  // 4000 tok/s per device
  cvs::MetricsContext ctx;
  ctx.num_nodes = 2;
  ctx.distributed = true;
  ctx.scaling_baseline.tokens_per_sec_total = 4000;  // one node's: 2 nodes at 4000 each is 100 %
  ctx.scaling_baseline.num_nodes = 1;
  const auto plan = cvs::EarlyStopPlan::make(100, 200, 25, false, 0.95);
  cvs::EarlyStopper stopper(plan, {threshold_spec("scaling_efficiency_pct", cvs::ThresholdKind::Min, 90)},
                            ctx);
  EXPECT_TRUE(stopper(std::vector<cvs::StepRecord>(all.begin(), all.begin() + 50)));
  EXPECT_NE(stopper.reason().find("scaling_efficiency_pct PASS"), std::string::npos) << stopper.reason();
  const auto m = cvs::compute_metrics(all, {}, ctx);
  const auto& eff = m.steady.intervals.at("scaling_efficiency_pct");
  EXPECT_NEAR(eff.estimate, 100.0, 1.0);
  EXPECT_LT(eff.lo, eff.estimate);
}

TEST(EarlyStop, OnlySpeedGatesAreDecidedEarly) {
  using K = cvs::ThresholdKind;
  const std::vector<cvs::ThresholdSpec> cell = {threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, 1),
                                                threshold_spec("step_time_p95_ms", K::Info, 0),
                                                threshold_spec("final_loss", K::Max, 9)};
  const auto g = cvs::speed_gates(&cell);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].metric, "tokens_per_sec_per_gpu");
  EXPECT_TRUE(cvs::gates_beyond_speed(&cell));
  const std::vector<cvs::ThresholdSpec> speed_only = {cell[0], cell[1]};
  EXPECT_FALSE(cvs::gates_beyond_speed(&speed_only));
}
