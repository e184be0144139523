// Interval estimates of throughput and step time over a run's steady state, for verdicts that
// say PASS, FAIL or "not enough evidence" (INCONCLUSIVE) instead of comparing one point.
//
// - Warm-up: MSER-5 (White 1997, "An effective truncation heuristic for bias reduction in
//   simulation output") picks where the steady state starts from the data, instead of a fixed
//   number of dropped steps.
// - Means and rates: non-overlapping batch means (Schmeiser 1982, "Batch size effects in the
//   analysis of simulation experiments"): consecutive step times are correlated, so the
//   t-interval is built over batch means, not over single steps.
// - Percentiles (p50, p95): a circular block bootstrap (Politis & Romano 1992) with a fixed
//   seed, so the same log always gives the same interval and the same verdict.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cvs/logs/maxtext_log.hpp"
#include "cvs/results/decimal_column.hpp"

namespace cvs {

struct Interval {
  double estimate = 0;
  double lo = 0;
  double hi = 0;
};

// The steady state's first index in x: MSER-5 over batches of 5 (over single observations when
// x has fewer than 10), the truncation searched in the first half of the series. nullopt for
// fewer than 2 batches.
std::optional<std::size_t> mser5_truncation(const std::vector<double>& x);

// A trend left after the warm-up: the least-squares line through the batch means over the
// window, its fitted values at the first and last batch, the relative change between them, and
// the slope's t statistic.
struct Drift {
  double relative = 0;
  double t = 0;
  double start = 0;
  double end = 0;
};
std::optional<Drift> drift(const std::vector<double>& x);  // nullopt below 3 batches
// A window whose step time drifts more than 20 % with |t| > 3 (a GPU clocking down, a leak, a
// cache warming) describes no single speed: its intervals are widened to cover the trend line's
// range, so a gate is decided only when the whole trend clears it (or misses it).
inline constexpr double kMaxDrift = 0.20;
inline constexpr double kDriftT = 3.0;

struct BatchMeans {
  Interval ci;
  std::size_t batches = 0;
  std::size_t batch_size = 0;
};

// How many batches a steady series of n observations is split into: floor(sqrt(n)) within
// [2, 20] (5 batches of 5 for 25 steps, 20 of 50 for 1000). 0 when n < 4.
std::size_t batch_count(std::size_t n);

// Two-sided `confidence` t-interval of the mean of x from its batch means (b - 1 degrees of
// freedom). Leftover observations are dropped from the front (nearest the warm-up).
std::optional<BatchMeans> batch_means(const std::vector<double>& x, double confidence);

// The same for the rate sum(work) / sum(time): each batch contributes sum(work_b) / sum(time_b).
std::optional<BatchMeans> batch_ratio(const std::vector<double>& work, const std::vector<double>& time,
                                      double confidence);

// Percentile interval of the pct-th percentile (linear interpolation) of x by a circular block
// bootstrap: blocks of ceil(n^(1/3)) observations, `resamples` resamples, a fixed seed. Above
// kBootstrapMaxResample observations each resample has that many (m-out-of-n), and the interval's
// sides are scaled by sqrt(m / n): the cost stays flat however long the run.
inline constexpr std::size_t kBootstrapMaxResample = 20000;
inline constexpr int kBootstrapResamples = 2000;
inline constexpr std::uint64_t kBootstrapSeed = 20261203;
std::optional<Interval> bootstrap_percentile(const std::vector<double>& x, double pct, double confidence,
                                             int resamples = kBootstrapResamples,
                                             std::uint64_t seed = kBootstrapSeed);

// Lag-1 autocorrelation of x (0 for fewer than 3 values or a constant series).
double lag1_autocorrelation(const std::vector<double>& x);

// The metrics steady_state gives intervals for: the speed metrics gated on intervals.
const std::vector<std::string>& interval_metric_names();
bool has_interval(const std::string& metric);

// Intervals for the speed metrics of one run, from its step records (head node).
struct SteadyState {
  bool found = false;          // false: too few steps for a steady state
  std::size_t first = 0;       // index of the first steady-state record among the timed records
  std::size_t n = 0;           // steady-state records
  long long first_step = -1;   // its step number
  std::string why;             // when !found
  std::optional<Drift> drift;  // a significant trend the intervals were widened for
  std::string note;            // says so
  std::map<std::string, Interval> intervals;  // metric name (without "training.") -> interval
};

// A record the steady state is measured on: its seconds are present and finite, and it is not a
// profiler boundary.
bool is_timed(const StepRecord& r);

// The timed records of a run, column by column: the step seconds and the two rates at a few bytes
// each (DecimalColumn; a rate that is absent or not finite reads as NaN) and the step numbers as
// runs of consecutive numbers (one run for an ordinary log). What the steady state needs of a
// multi-million-step log, without its records.
class TimedSeries {
 public:
  void add(const StepRecord& r);  // r must be timed
  std::size_t size() const { return seconds_.size(); }
  long long step_at(std::size_t i) const;
  const DecimalColumn& seconds() const { return seconds_; }
  const DecimalColumn& tokens_per_device() const { return tokens_; }
  const DecimalColumn& tflops_per_device() const { return tflops_; }

 private:
  DecimalColumn seconds_, tokens_, tflops_;
  std::vector<std::pair<std::size_t, long long>> runs_;  // (first index, its step) where numbering breaks
  long long last_step_ = 0;
};

// Metrics: step_time_seconds, step_time_mean_ms, step_time_p50_ms, step_time_p95_ms,
// tokens_per_sec_per_gpu, tflops_per_sec_per_gpu (rates as work over time per batch), and
// tokens_per_sec_total (the per-GPU interval times devices).
SteadyState steady_state(const TimedSeries& timed, int devices, double confidence);
SteadyState steady_state(const std::vector<StepRecord>& steps, int devices, double confidence);

}  // namespace cvs
