// Run metrics from MaxText step records: the spec's "Tracked metrics" table plus the
// Megatron-Bridge card figures (initial_loss, last_10_steps_*_avg).
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/config/config.hpp"
#include "cvs/logs/maxtext_log.hpp"
#include "cvs/statistics/step_stats.hpp"

namespace cvs {

// The warm-up: a run's first kWarmupSteps step numbers. A run that starts at step 0 drops steps 0
// (it compiles) and 1 (often irregular); any other (a run resumed from a checkpoint at step 6, a
// log cut from mid-run, lines numbered from 1) drops each of its first two only when it is
// evidently not a steady step, outside StepSeries::kSteadyWarmup of the records after it.
inline constexpr std::size_t kWarmupSteps = 2;

struct MetricsContext {
  int num_nodes = 1;
  int gpus_per_node = 1;
  ScalingBaseline scaling_baseline;
  Convergence convergence;
  LossCurve loss_curve;
  bool distributed = false;  // scaling_efficiency_pct is a distributed metric (the spec's table)
  double confidence = 0.95;  // of the steady-state intervals (statistics.confidence)
  // The run's first step when it is known beyond these records (another host's view of the run
  // began earlier): the warm-up is the run's first kWarmupSteps step numbers.
  std::optional<long long> run_first_step;
  // A record over this many times the median of the steps around it that no eval, checkpoint
  // save or profiler window explains is a stall (statistics.stall_factor).
  double stall_factor = 5;
};

// A record left out of every speed figure (the point figures, the steady-state window, the
// percentiles and the last-10 averages) because its time is not one step's: the rule and why.
enum class ExcludedBecause { AsyncDispatch, CatchUp, StartUp, Eval, CheckpointSave, Profiler, Stall };
const char* to_string(ExcludedBecause b);
struct ExcludedStep {
  long long step = 0;
  double seconds = 0;
  ExcludedBecause rule = ExcludedBecause::AsyncDispatch;
};

// A stall: a step whose time is far above the run's own steady step time (MetricsContext::
// stall_factor) with nothing in the log to explain it: named with its step, its seconds and what
// it cost over a normal step (`usual`: the median of the steps around it).
struct Stall {
  long long step = 0;
  double seconds = 0, usual = 0;
  long long line_no = 0;
  double lost() const { return seconds - usual; }
};

// The fewest speed records a point speed figure is given from: fewer is a note, not a figure.
inline constexpr std::size_t kMinSpeedRecords = 3;

struct LossPoint {
  long long step;
  double loss;
};

// A run's figures: a slot per catalog metric, set or absent (a set NaN is a figure that was not
// finite). Code names a metric by its enum; a threshold file's name goes through the catalog.
class MetricValues {
 public:
  void set(Metric m, double v) { slots_[index(m)] = v; }
  void erase(Metric m) { slots_[index(m)].reset(); }
  std::optional<double> get(Metric m) const { return slots_[index(m)]; }
  // By its catalog name ("training."-less); nullopt for a name the catalog does not have.
  std::optional<double> get(std::string_view name) const;
  // Each metric set, with its value, in catalog order.
  std::vector<std::pair<Metric, double>> entries() const;
  std::size_t size() const {
    return static_cast<std::size_t>(
        std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s.has_value(); }));
  }

 private:
  static std::size_t index(Metric m) { return static_cast<std::size_t>(m); }
  std::array<std::optional<double>, kMetricCount> slots_{};
};

struct RunMetrics {
  MetricValues values;
  std::vector<LossPoint> loss_curve;     // every step's loss, for plots
  std::vector<LossPoint> sampled_curve;  // the points the slope is fitted on
  std::vector<double> step_times_s;      // the speed records' step times (with keep_curves)
  bool nonfinite_loss = false;           // a NaN/inf loss was seen
  std::optional<long long> first_nonfinite_step;
  std::size_t warmup_dropped = 0;              // the warm-up records and the asynchronous ones below
  std::vector<long long> async_dropped_steps;  // records left out of the point figures as not a step's time
  std::vector<ExcludedStep> excluded;          // every record left out, with its rule (async ones too)
  std::vector<Stall> stalls;                   // the stalls, the first kNamedStalls named
  std::string stall_summary;  // the stalls in words ("" for none): a note, and on the gates they fail
  std::optional<std::pair<long long, long long>> point_steps;  // the steps the point speed figures cover
  SteadyState steady;              // MSER-5 steady state and the speed metrics' intervals (step_stats.hpp)
  std::vector<std::string> notes;  // why a metric is absent, e.g. "target not reached"

  std::optional<double> get(Metric m) const { return values.get(m); }
  std::optional<double> get(const std::string& name) const { return values.get(name); }
};

// Rejects duplicate step numbers and step numbers that go down (a blended or restarted log).
void check_step_series(const std::vector<StepRecord>& steps, const std::string& source);

// The last N values pushed, oldest first (a fixed ring: no allocation per record).
template <class T, std::size_t N>
class Tail {
 public:
  void push(const T& v) { v_[n_++ % N] = v; }
  const T* next_evicted() const { return n_ >= N ? &v_[n_ % N] : nullptr; }  // what push() drops
  std::size_t size() const { return n_ < N ? n_ : N; }
  std::size_t pushed() const { return n_; }
  const T& operator[](std::size_t k) const { return v_[(n_ - size() + k) % N]; }  // k = 0: the oldest kept

 private:
  std::array<T, N> v_{};
  std::size_t n_ = 0;
};

// The same metrics from records fed one at a time, in log order, evals among them: what it keeps
// is a few bytes per timed step (TimedSeries) and the sampled loss curve as compact columns,
// never the records, so `cvs metrics` reads a multi-GB log in bounded memory. compute_metrics
// (run_figures.hpp) is this fed from vectors (evals first). With keep_curves, RunMetrics gets every step's
// loss and the sampled points (for plots); without, they stay empty and only the figures are computed.
class StepSeries {
 public:
  StepSeries(const MetricsContext& ctx, bool keep_curves);
  void add_eval(const EvalRecord& e);
  void add(const StepRecord& r);
  std::size_t steps() const { return records_; }
  // Throws MetricsError for the first repeated or decreasing step number seen (check_step_series).
  void check_order(const std::string& source) const;
  // A checkpoint save or a profiler window's edge, in log order among the steps.
  void add_marker(const StepMarker& m);
  RunMetrics finish();

 private:
  void add_speed(const StepRecord& r);
  void add_loss_curve(const StepRecord& r);
  void add_convergence(const StepRecord& r);
  // A speed record as the point figures take it (the step's timed index, or kNoIndex).
  static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
  struct SpeedRecord {
    long long step = 0;
    double seconds = 0;
    std::optional<double> tflops, tokens;
    std::size_t timed = kNoIndex;
  };
  // Records wait for kLookahead later ones before they are judged: a record is a step's time, or
  // one of the records that are not (ExcludedBecause), by the median of the records around it.
  static constexpr std::size_t kAsyncCandidates = 2, kLookahead = 5;
  static constexpr double kDispatchRatio = 0.2;
  // A warm-up candidate within this factor of the records after it (either way) is a steady step.
  static constexpr double kSteadyWarmup = 1.2;
  std::size_t warmup_kept_ = 0;
  struct Queued {
    StepRecord r;
    bool timed = false;  // is_timed(r), asked once
    bool warmup = false;
    std::optional<std::pair<ExcludedBecause, long long>> mark;  // an event its time may include
  };
  void judge_front();
  bool steady_warmup(const StepRecord& r) const;    // a timed warm-up candidate that is a steady step
  std::optional<double> reference_seconds() const;  // for the front record
  std::optional<ExcludedBecause> excluded_because(const Queued& q, double ref);
  void exclude(const Queued& q, ExcludedBecause why, double ref);
  std::string exclusion_note(const Queued& q, ExcludedBecause why, double ref) const;
  void mark_steps(ExcludedBecause why, long long step);
  void exclude_timed(std::size_t i);
  void commit_speed(const SpeedRecord& r);
  void exclusion_notes(RunMetrics& m);
  void speed_metrics(RunMetrics& m);
  void loss_curve_metrics(RunMetrics& m);
  void stall_metrics(RunMetrics& m);
  void convergence_metrics(RunMetrics& m);

  MetricsContext ctx_;
  bool keep_curves_;
  std::size_t records_ = 0;
  std::optional<std::pair<long long, long long>> order_problem_;  // (previous, current) step
  StepRecord first_, last_;
  std::optional<double> first_loss_, last_loss_;  // of the steps whose line names a loss
  bool nonfinite_ = false;
  long long first_nonfinite_ = 0;
  std::vector<LossPoint> loss_curve_;
  std::vector<double> speed_times_;
  // Speed figures over the records after the warm-up (by position), as running sums.
  struct Rate {
    double work = 0, time = 0;
    std::size_t n = 0;
    Tail<double, 10> last;
  };
  std::size_t speed_n_ = 0, speed_nonfinite_ = 0;
  long long speed_first_step_ = 0, speed_last_step_ = 0;
  double speed_secs_ = 0;
  Tail<double, 10> last_secs_;
  Rate tflops_, tokens_;
  bool any_tflops_ = false, any_tokens_ = false;
  // The judge's state: the records waiting, the seconds of the last kept ones (the reference when
  // too few follow), whether the last judged record timed a dispatch, the start-up run.
  std::deque<Queued> queue_;
  Tail<double, kLookahead> recent_kept_;
  bool last_dispatch_ = false;
  std::optional<long long> last_dispatch_step_;
  std::size_t startup_left_ = kAsyncCandidates;
  bool judged_any_ = false;
  long long warmup_end_step_ = 0;
  std::map<long long, std::pair<ExcludedBecause, long long>> marks_ahead_;  // step -> (event, its step)
  bool profiler_open_ = false, mark_next_profiler_ = false;
  // The first kNamedExclusions records left out are named one by one (steps, notes); past them
  // only counted a rule (a multi-GB log in bounded memory).
  static constexpr std::size_t kNamedExclusions = 20;
  std::vector<long long> async_dropped_;
  std::vector<ExcludedStep> excluded_;
  std::vector<std::string> async_notes_;
  std::size_t async_total_ = 0;
  std::array<std::size_t, 7> excluded_by_rule_{};
  // Stalls: the first kNamedStalls, and the count and seconds lost of all; the seconds of every
  // timed record judged (what time_lost_pct is a share of).
  static constexpr std::size_t kNamedStalls = 20;
  std::vector<Stall> stalls_;
  std::size_t stall_count_ = 0;
  double stall_lost_ = 0, judged_seconds_ = 0;
  // Timed records the speed percentiles leave out (warm-up, rampup), as index ranges.
  std::vector<std::pair<std::size_t, std::size_t>> not_speed_;
  TimedSeries timed_;
  // Sampled loss curve: its steps as runs (start index, first step, stride, count) and its losses.
  struct Run {
    std::size_t at;
    long long first, stride;
    std::size_t n;
  };
  std::vector<Run> sampled_steps_;
  DecimalColumn sampled_loss_{3};
  bool last_sampled_ = false;  // the latest record is on the curve
  // Convergence: the first train step at the target, the first eval at it, and the time to it.
  double cum_seconds_ = 0;
  std::optional<std::pair<long long, double>> train_hit_;  // step, seconds to it
  std::size_t evals_ = 0;
  double last_eval_loss_ = 0;
  std::optional<long long> eval_hit_;
  double eval_seconds_ = 0;
  bool eval_open_ = false, eval_lost_ = false;
  Tail<std::pair<long long, double>, 64> recent_;  // the last steps (step, seconds)
  double before_recent_ = 0;                       // the seconds of the steps before them
};

// The one definition of a percentile here: over n sorted values, rank = pct/100 x (n - 1), and
// the value interpolated linearly between the values at floor(rank) and ceil(rank). Every
// percentile (of a vector, a column, a histogram of resamples) reads its two order statistics
// and calls at().
struct PercentileRank {
  std::size_t lo = 0, hi = 0;
  double frac = 0;
  double at(double lo_value, double hi_value) const { return lo_value + (hi_value - lo_value) * frac; }
};
PercentileRank percentile_rank(std::size_t n, double pct);  // n >= 1

// Helpers shared with reports.
double percentile(std::vector<double> v, double pct);            // linear interpolation, pct in [0,100]
double percentile_in_place(std::vector<double>& v, double pct);  // the same; reorders v
// Several percentiles of v at once (ascending pcts select each among the elements above the last).
std::vector<double> percentiles_in_place(std::vector<double>& v, const std::vector<double>& pcts);
std::optional<double> least_squares_slope(const std::vector<LossPoint>& pts);

}  // namespace cvs
