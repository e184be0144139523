// Interval estimates of throughput and step time over a run's steady state, for verdicts that
// say PASS, FAIL or "not enough evidence" (INCONCLUSIVE) instead of comparing one point. The
// promise is the one a confidence level makes: a 95 % interval holds the true figure in 95 % of
// runs, or no interval is given and the gate says why. The coverage study (tests/support/
// coverage_study.hpp, bench/coverage_study) holds the procedure to that on simulated series.
//
// - Precision: MaxText prints `seconds` with 3 decimals, but `Tokens/s/device` is its tokens per
//   step divided by the same full-precision seconds, printed with 3 decimals of a large number.
//   The steady state is measured on 1 / Tokens/s (seconds per token): exact to 8 or more
//   significant digits. The step time is that times the tokens per step, which the log pins down
//   to an interval (every step's printed seconds and tokens/s bound it: work_per_step); the step
//   time's interval carries that interval's ends. Without tokens/s the printed seconds are used
//   and every bound moves out by half their resolution (the rounding's worst case, Sheppard).
// - Warm-up: the first two records (MaxText's step 0 compiles, its step 1 is often irregular) are
//   never in the window; the window then starts after the leading records that lie outside the
//   steady level's band (median +- 4 robust standard deviations of the second half): a warm-up is
//   cut where it ends, and a quiet tail is never chosen for being quiet (MSER's bias, Pasupathy &
//   Schmeiser 2010).
// - The mean's interval: non-overlapping batch means (Schmeiser 1982) with batches long enough to
//   be nearly independent: b = n / m batches of m >= 2 x tau_U steps, where tau_U = (1 + phi_U) /
//   (1 - phi_U) from an upper 95 % bound phi_U on the bias-corrected lag-1 autocorrelation
//   (Kendall: E[phi_hat] ~ phi - (1 + 3 phi) / n), at least 5 and at most 20 batches; the batch
//   means' remaining correlation at phi_U inflates their variance; a t interval with b - 1 degrees
//   of freedom, shifted by half the Cornish-Fisher skewness term (Hall 1992) for step-time spikes.
//   Fewer than 5 such batches: no interval ("too few steady steps for the correlation seen").
// - Drift: a window whose step time still trends (kMaxDrift) is no steady state: no interval.
// - Percentiles (p50, p95): distribution-free order-statistic intervals, the binomial ranks'
//   spread inflated by tau_U for correlation; no interval when a rank would fall outside the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/logs/maxtext_log.hpp"
#include "cvs/statistics/decimal_column.hpp"

namespace cvs {

struct Interval {
  double estimate = 0;
  double lo = 0;
  double hi = 0;
};

// The steady-state window never holds the first kCompileCut timed records.
inline constexpr std::size_t kCompileCut = 2;
// A leading record farther than this many robust standard deviations from the steady level is
// warm-up.
inline constexpr double kWarmupBand = 4.0;
inline constexpr std::size_t kMinBatches = 5;
inline constexpr std::size_t kMaxBatches = 20;
inline constexpr double kBatchPerTau = 2.0;       // a batch holds at least 2 x tau_U steps
inline constexpr double kLag1UpperZ = 1.645;      // phi_U: the one-sided 95 % bound
inline constexpr double kSkewShare = 0.5;         // of the Cornish-Fisher shift (measured)
inline constexpr double kPrintResolution = 1e-3;  // MaxText's 3 decimals
// The fewest steady steps that can give 5 batches of 2 x tau_U at all (tau_U >= 1.98 at n = 25
// even for uncorrelated steps): below it no interval, whatever the steps.
inline constexpr std::size_t kMinSteadySteps = 25;

// Where the steady state starts in x: kCompileCut, or after the contiguous leading records
// outside the band (at most a third of the rest). x.size() when x has no more than kCompileCut.
std::size_t warmup_end(const std::vector<double>& x);

// The standard normal quantile: z with P(Z <= z) = p, 0 < p < 1 (Boost.Math).
double normal_quantile(double p);

// The interval of a series' mean (see the header comment), or why there is none.
struct MeanInterval {
  std::optional<Interval> ci;
  double lag1 = 0;        // the sample's lag-1 autocorrelation
  double lag1_upper = 0;  // phi_U
  double tau_upper = 1;   // steps per independent one, at phi_U
  std::size_t batches = 0, batch_size = 0;
  std::string why;  // when !ci
};
MeanInterval mean_interval(const std::vector<double>& x, double confidence);

// The distribution-free interval of the pct-th percentile (linear interpolation for the estimate)
// of x: the order statistics at ranks n p -+ z sqrt(n p (1 - p) tau) (tau >= 1 for correlation);
// nullopt when a rank falls outside the series.
std::optional<Interval> percentile_interval(const std::vector<double>& x, double pct, double confidence,
                                            double tau);

// What one step's work is (tokens, or TFLOPs), pinned by every record: MaxText prints rate_i =
// work / t_i and seconds_i = t_i, each rounded to its resolution (0: exact), so work lies in
// [(rate - qr/2)(seconds - qs/2), (rate + qr/2)(seconds + qs/2)] for every i. The intersection,
// or nullopt when it is empty (the work per step is not constant) or no record has both.
struct Range {
  double lo = 0, hi = 0;
  double mid() const { return (lo + hi) / 2; }
};
std::optional<Range> work_per_step(const std::vector<double>& seconds, const std::vector<double>& rate,
                                   double seconds_resolution, double rate_resolution);

// A trend left after the warm-up: the least-squares line through the batch means over the
// window, its levels at the window's first and last step, the relative change between them, the
// slope's t statistic, and the band that holds both ends' levels (each end +/- t(b - 2) x its
// fitted value's standard error).
struct Drift {
  double relative = 0;
  double t = 0;
  double start = 0;
  double end = 0;
  double mean = 0;  // the batch means' mean
  double lo = 0;    // min(start, end) less its uncertainty
  double hi = 0;    // max(start, end) plus its uncertainty
  std::size_t batches = 0, batch_size = 0;
};
std::optional<Drift> drift(const std::vector<double>& x,
                           double confidence = 0.95);  // nullopt below 3 batches
// A window whose step time drifts more than 20 % with |t| > 3 (a GPU clocking down, a leak, a
// cache warming, a neighbour's load arriving) describes no single speed: its intervals span the
// trend's band [Drift::lo, Drift::hi], so only a gate the whole trend clears (PASS) or misses
// (FAIL) is decided and any other is INCONCLUSIVE, with the drift named in the verdict.
inline constexpr double kMaxDrift = 0.20;
inline constexpr double kDriftT = 3.0;
// "the step time drifts +64 % across the 198 steady-state steps (slope t = 5.6): no single speed"
std::string drift_note(const Drift& d, std::size_t steps);

// How many batches drift() fits its line through: floor(sqrt(n)) within [2, 20]; 0 when n < 4.
std::size_t batch_count(std::size_t n);

// Lag-1 autocorrelation of x (0 for fewer than 3 values or a constant series).
double lag1_autocorrelation(const std::vector<double>& x);

// The metrics steady_state gives intervals for: the speed metrics gated on intervals.
const std::vector<std::string>& interval_metric_names();
bool has_interval(const std::string& metric);

// What the steady state's step times were read from.
enum class TimeSource {
  TokensRate,      // 1 / Tokens/s/device, times the tokens per step (work_per_step)
  PrintedSeconds,  // the 3-decimal seconds, every bound widened by half their resolution
  FullPrecision,   // seconds that are not 3-decimal figures (a metrics_file)
};
const char* to_string(TimeSource s);

// Intervals for the speed metrics of one run, from its step records (head node).
struct SteadyState {
  bool found = false;         // a window exists (steps after the warm-up)
  std::size_t first = 0;      // index of the first steady-state record among the timed records
  std::size_t n = 0;          // steady-state records
  long long first_step = -1;  // its step number
  std::string why;            // why there are no intervals (empty when there are)
  double confidence = 0.95;   // the level the intervals were built at
  TimeSource source = TimeSource::PrintedSeconds;
  std::optional<Range> tokens_per_step;  // TimeSource::TokensRate: the work per step's range
  double lag1 = 0, lag1_upper = 0;
  std::size_t batches = 0, batch_size = 0;
  std::optional<Drift> drift;                  // a significant trend (the intervals span it)
  std::string note;                            // what the reader should know (the step times' source)
  std::map<std::string, Interval> intervals;   // metric name (without "training.") -> interval
  std::map<std::string, std::string> missing;  // a metric the window has no interval for -> why
  // Why `metric` has no interval: its own reason, else the window's.
  std::string why_none(const std::string& metric) const;
};

// A record the steady state is measured on: its seconds are present and finite, it is not a
// profiler boundary and not a batch-size rampup step (rampup lines carry no rates, and the batch
// they time is not the run's).
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
// tokens_per_sec_per_gpu, tflops_per_sec_per_gpu and tokens_per_sec_total (the per-GPU interval
// times devices). Without `percentiles` the p50/p95 intervals are left out (the coverage study).
SteadyState steady_state(const TimedSeries& timed, int devices, double confidence, bool percentiles = true);
SteadyState steady_state(const std::vector<StepRecord>& steps, int devices, double confidence);

}  // namespace cvs
