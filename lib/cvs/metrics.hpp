// Run metrics from MaxText step records: the spec's "Tracked metrics" table plus the
// Megatron-Bridge card figures (initial_loss, last_10_steps_*_avg).
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cvs/config.hpp"
#include "cvs/maxtext_log.hpp"
#include "cvs/step_stats.hpp"

namespace cvs {

// A step series that cannot be trusted as one run (duplicate steps, step numbers going down).
class MetricsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Records dropped from the front of a run before any throughput/step-time statistic: the first
// step includes compilation and the second is often unrealistically short. Dropped by position,
// not by step number, so a run resumed from a checkpoint at step 6 drops its steps 6 and 7.
inline constexpr std::size_t kWarmupSteps = 2;

struct MetricsContext {
  int num_nodes = 1;
  int gpus_per_node = 1;
  ScalingBaseline scaling_baseline;
  Convergence convergence;
  LossCurve loss_curve;
  bool distributed = false;  // scaling_efficiency_pct is a distributed metric (the spec's table)
  double confidence = 0.95;  // of the steady-state intervals (statistics.confidence)
};

struct LossPoint {
  long long step;
  double loss;
};

struct RunMetrics {
  std::map<std::string, double> values;  // metric name (without "training.") -> value
  std::vector<LossPoint> loss_curve;     // every step's loss, for plots
  std::vector<LossPoint> sampled_curve;  // the points the slope is fitted on
  std::vector<double> step_times_s;      // steady-state step times
  bool nonfinite_loss = false;           // a NaN/inf loss was seen
  std::optional<long long> first_nonfinite_step;
  std::size_t warmup_dropped = 0;
  SteadyState steady;              // MSER-5 steady state and the speed metrics' intervals (step_stats.hpp)
  std::vector<std::string> notes;  // why a metric is absent, e.g. "target not reached"

  std::optional<double> get(const std::string& name) const;
};

// Every metric name the suite can produce, "training."-less, in report order.
const std::vector<std::string>& tracked_metric_names();

// Rejects duplicate step numbers and step numbers that go down (a blended or restarted log).
void check_step_series(const std::vector<StepRecord>& steps, const std::string& source);

RunMetrics compute_metrics(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx);

// Helpers shared with reports.
double percentile(std::vector<double> v, double pct);  // linear interpolation, pct in [0,100]
std::optional<double> least_squares_slope(const std::vector<LossPoint>& pts);

}  // namespace cvs
