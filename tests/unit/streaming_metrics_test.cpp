// The bounded-memory metrics path: DecimalColumn keeps every value exactly in a few bytes, its
// in-place order statistics equal a sort, and the streaming StepSeries (what `cvs metrics` feeds
// from the scanner) gives the very numbers compute_metrics gives from vectors, intervals included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cvs/logs/logscan.hpp"
#include "cvs/statistics/decimal_column.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/run_figures.hpp"
#include "cvs/statistics/step_stats.hpp"
#include "test_helpers.hpp"

namespace {

// What a MaxText line prints: a value with 3 decimals, read back as the parser reads it.
double printed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return std::strtod(buf, nullptr);
}

std::vector<double> column_values(const cvs::DecimalColumn& c) {
  std::vector<double> v;
  for (std::size_t i = 0; i < c.size(); ++i) v.push_back(c[i]);
  return v;
}

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    ASSERT_EQ(a[i], b[i]) << "value " << i;
  }
}

}  // namespace

TEST(DecimalColumn, KeepsPrintedValuesExactlyInTheFewestBytesAndWidensWhenItMust) {
  cvs::DecimalColumn c;
  std::vector<double> in;
  for (double v : {0.038, 0.18, 0.002, 0.254}) in.push_back(v);  // counts below 255: one byte
  for (double v : in) c.push_back(v);
  EXPECT_EQ(c.width(), 1);
  in.push_back(printed(13641.692));  // 13 641 692 thousandths: three bytes
  c.push_back(in.back());
  EXPECT_EQ(c.width(), 3);
  in.push_back(std::nan(""));  // an absent rate
  c.push_back(in.back());
  in.push_back(printed(339747.843));  // four bytes
  c.push_back(in.back());
  EXPECT_EQ(c.width(), 4);
  expect_same_bits(column_values(c), in);
  in.push_back(0.1 + 0.2);  // not a count of thousandths: the column becomes doubles, still exact
  c.push_back(in.back());
  EXPECT_EQ(c.width(), 8);
  in.push_back(-1.5);
  c.push_back(in.back());
  expect_same_bits(column_values(c), in);
}

TEST(DecimalColumn, HoldsAMillionStepTimesInTwoBytesEachAcrossChunks) {
  cvs::DecimalColumn c;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> ms(1, 60000);
  std::vector<double> in;
  for (int i = 0; i < 1'000'000; ++i) {
    in.push_back(ms(rng) / 1000.0);
    c.push_back(in.back());
  }
  EXPECT_EQ(c.width(), 2);
  EXPECT_LE(c.bytes(), 2'100'000u);
  expect_same_bits(column_values(c), in);
}

TEST(DecimalColumn, OrderStatisticsOfIndexRangesEqualASortAtEveryWidth) {
  std::mt19937_64 rng(11);
  for (double top : {0.2, 60.0, 13000.0, 3e6, -1.0}) {  // widths 1, 2, 3, 4 and plain doubles
    cvs::DecimalColumn c;
    std::uniform_real_distribution<double> d(top < 0 ? -50 : 0, top < 0 ? 50 : top);
    for (int i = 0; i < 5000; ++i) c.push_back(top < 0 ? d(rng) : printed(d(rng)));
    c.push_back(std::nan(""));  // absent values are never selected
    const std::vector<std::pair<std::size_t, std::size_t>> ranges = {{3, 1200}, {1500, 1501}, {2000, 5001}};
    std::vector<double> sorted;
    for (const auto& [b, e] : ranges)
      for (std::size_t i = b; i < e; ++i)
        if (!std::isnan(c[i])) sorted.push_back(c[i]);
    std::sort(sorted.begin(), sorted.end());
    const std::vector<std::size_t> ranks = {0, 1, sorted.size() / 2, sorted.size() / 2 + 1,
                                            sorted.size() - 1};
    const auto got = c.order_statistics(ranges, ranks);
    for (std::size_t k = 0; k < ranks.size(); ++k)
      EXPECT_EQ(got[k], sorted[ranks[k]]) << "width " << c.width();
    EXPECT_THROW(c.order_statistics(ranges, {sorted.size()}), std::out_of_range);
  }
}

namespace {

std::vector<cvs::StepRecord> printed_steps(std::size_t n, bool full_precision, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> t(std::log(0.4), 0.15);
  std::vector<cvs::StepRecord> s;
  for (std::size_t i = 0; i < n; ++i) {
    cvs::StepRecord r;
    r.step = static_cast<long long>(i);
    const double secs = (i == 0 ? 9.0 : t(rng));
    r.seconds = full_precision ? secs : printed(secs);
    r.tokens_per_device = full_precision ? 4096 / secs : printed(4096 / secs);
    r.tflops_per_device = full_precision ? 0.8 / secs : printed(0.8 / secs);
    r.loss = printed(6.0 - 0.0001 * static_cast<double>(i));
    s.push_back(r);
  }
  return s;
}

}  // namespace

// The steady state read from the columns (seconds per token as the reciprocal of the Tokens/s
// column, its order statistics by radix selection) equals the vector statistics on the same
// window, bit for bit; step times are those times the tokens per step the log pins down.
TEST(StreamingMetrics, ColumnIntervalsEqualTheVectorStatisticsOnTheSameWindow) {
  for (bool full : {false, true})
    for (std::size_t n : {std::size_t{300}, std::size_t{30000}}) {
      const auto steps = printed_steps(n, full, 5);
      const auto s = cvs::steady_state(steps, 8, 0.95);
      ASSERT_TRUE(s.found) << s.why;
      ASSERT_TRUE(s.tokens_per_step);
      EXPECT_EQ(s.source, full ? cvs::TimeSource::FullPrecision : cvs::TimeSource::TokensRate);
      std::vector<double> core;
      for (const auto& r : steps) core.push_back(1.0 / *r.tokens_per_device);
      const std::size_t first = cvs::warmup_end(core);
      const std::vector<double> window(core.begin() + static_cast<long>(first), core.end());
      const auto mi = cvs::mean_interval(window, 0.95);
      ASSERT_TRUE(mi.ci) << mi.why;
      EXPECT_EQ(s.first, first + window.size() - mi.batches * mi.batch_size);
      const auto& tok = s.intervals.at("tokens_per_sec_per_gpu");
      EXPECT_EQ(tok.estimate, 1.0 / mi.ci->estimate);
      EXPECT_EQ(tok.lo, 1.0 / mi.ci->hi) << n << (full ? " doubles" : " counts");
      EXPECT_EQ(tok.hi, 1.0 / mi.ci->lo);
      EXPECT_EQ(s.intervals.at("tokens_per_sec_total").lo, tok.lo * 8);
      const auto& k = *s.tokens_per_step;
      EXPECT_LE(k.lo, 4096.0);
      EXPECT_GE(k.hi, 4096.0);
      EXPECT_EQ(s.intervals.at("step_time_seconds").lo, mi.ci->lo * k.lo);
      EXPECT_EQ(s.intervals.at("step_time_seconds").hi, mi.ci->hi * k.hi);
      const std::vector<double> batched(core.begin() + static_cast<long>(s.first), core.end());
      for (auto [pct, name] : {std::pair{50.0, "step_time_p50_ms"}, std::pair{95.0, "step_time_p95_ms"}}) {
        const auto p = cvs::percentile_interval(batched, pct, 0.95, mi.tau_upper);
        ASSERT_TRUE(p) << name;
        const auto& i = s.intervals.at(name);
        EXPECT_EQ(i.estimate, p->estimate * k.mid() * 1e3) << name;
        EXPECT_EQ(i.lo, p->lo * k.lo * 1e3) << name;
        EXPECT_EQ(i.hi, p->hi * k.hi * 1e3) << name;
      }
    }
}

namespace {

struct ToSeries : cvs::RecordSink {
  cvs::StepSeries* s;
  explicit ToSeries(cvs::StepSeries* series) : s(series) {}
  void step(const cvs::StepRecord& r) override { s->add(r); }
  void eval(const cvs::EvalRecord& e) override { s->add_eval(e); }
};

void expect_same_metrics(const cvs::RunMetrics& a, const cvs::RunMetrics& b, const std::string& what) {
  EXPECT_EQ(a.notes, b.notes) << what;
  ASSERT_EQ(a.values.size(), b.values.size()) << what;
  for (const auto& [k, v] : a.values.entries()) {
    const auto other = b.values.get(k);
    ASSERT_TRUE(other) << what << ": " << cvs::to_string(k);
    if (!(std::isnan(v) && std::isnan(*other))) {
      EXPECT_EQ(v, *other) << what << ": " << cvs::to_string(k);
    }
  }
  EXPECT_EQ(a.steady.found, b.steady.found) << what;
  EXPECT_EQ(a.steady.first_step, b.steady.first_step) << what;
  for (const auto& [k, i] : a.steady.intervals) {
    EXPECT_EQ(i.lo, b.steady.intervals.at(k).lo) << what << ": " << k;
    EXPECT_EQ(i.hi, b.steady.intervals.at(k).hi) << what << ": " << k;
  }
  EXPECT_EQ(a.first_nonfinite_step, b.first_nonfinite_step) << what;
}

}  // namespace

// Every captured real log, streamed from the scanner, gives what the vectors give.
TEST(StreamingMetrics, ScannerStreamEqualsTheVectorsOnEveryCapturedLog) {
  cvs::MetricsContext ctx;
  ctx.convergence.target_value = 6.0;  // reached by some logs' training loss
  for (const char* log : {"logs/cpu_tiny_12steps.log", "logs/cpu_bs4_30steps.log", "logs/cpu_ckpt_phase1.log",
                          "logs/cpu_ckpt_phase2.log", "logs/cpu_2proc_rank0.log", "logs/cpu_nan_abort.log",
                          "logs/cpu_8steps_with_metrics_file.log"}) {
    const auto whole = cvs::scan_log_file(cvs::test::data(log), cvs::default_error_patterns());
    const auto want = cvs::compute_metrics(whole.steps, whole.evals, ctx);
    cvs::StepSeries series(ctx, false);
    ToSeries sink(&series);
    const auto streamed = cvs::scan_log_file(cvs::test::data(log), cvs::default_error_patterns(), &sink);
    EXPECT_TRUE(streamed.steps.empty()) << "the sink takes the steps";
    EXPECT_EQ(series.steps(), whole.steps.size());
    const auto got = series.finish();
    expect_same_metrics(got, want, log);
    EXPECT_TRUE(got.loss_curve.empty() && got.sampled_curve.empty()) << "no curves without keep_curves";
  }
}

// Convergence on eval loss when the eval line comes before, between or after the step lines
// around it: the time to target is the seconds of the steps up to the eval's step, summed in order.
TEST(StreamingMetrics, EvalTargetTimeDoesNotDependOnWhereTheEvalLineFalls) {
  const auto steps = printed_steps(200, false, 9);
  cvs::MetricsContext ctx;
  ctx.convergence.target_value = 7.0;
  ctx.convergence.target_metric = "eval_loss";
  const std::vector<cvs::EvalRecord> evals = {{50, 7.5}, {100, 6.5}, {150, 6.0}};
  const auto want = cvs::compute_metrics(steps, evals, ctx);
  ASSERT_EQ(*want.get("steps_to_target"), 100);
  for (long long lag : {-3, 0, 1, 20, 63}) {  // the eval line this many step lines after step 100's
    cvs::StepSeries series(ctx, true);
    std::size_t next_eval = 0;
    for (const auto& r : steps) {
      series.add(r);
      while (next_eval < evals.size() && r.step == evals[next_eval].after_step + lag)
        series.add_eval(evals[next_eval++]);
    }
    const auto got = series.finish();
    EXPECT_EQ(got.get("time_to_target_seconds"), want.get("time_to_target_seconds")) << "lag " << lag;
    EXPECT_EQ(got.sampled_curve.size(), want.sampled_curve.size());
  }
  cvs::StepSeries late(ctx, false);  // more lines between than the series remembers: said, not guessed
  for (const auto& r : steps) late.add(r);
  for (const auto& e : evals) late.add_eval(e);
  const auto got = late.finish();
  EXPECT_EQ(*got.get("steps_to_target"), 100);
  EXPECT_FALSE(got.get("time_to_target_seconds"));
  EXPECT_NE(std::find_if(
                got.notes.begin(), got.notes.end(),
                [](const std::string& n) { return n.find("time_to_target_seconds") != std::string::npos; }),
            got.notes.end());
}

TEST(StreamingMetrics, RepeatedOrFallingStepsAreRejectedAsTheVectorCheckRejectsThem) {
  auto steps = printed_steps(20, false, 1);
  steps[10].step = 9;
  cvs::StepSeries series({}, false);
  for (const auto& r : steps) series.add(r);
  EXPECT_THROW(cvs::check_step_series(steps, "x.log"), cvs::MetricsError);
  try {
    series.check_order("x.log");
    FAIL() << "a repeated step passed";
  } catch (const cvs::MetricsError& e) {
    EXPECT_NE(std::string(e.what()).find("step 9 appears twice"), std::string::npos) << e.what();
  }
}
