// The metric catalog: every metric the suite reports, once, with what the rest of the tree needs
// to know about it. Everything else reads it: the names in results.json and threshold files
// (tracked_metric_names), the better direction (compare, margins), which stage gates it
// (test_metric per sweep, or checkpoint_resume), whether the steady-state statistics give it an
// interval (interval verdicts), and whether it is a speed metric (calibration, "uncalibrated").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cvs {

// Every metric the suite reports, in report (catalog) order; its name is the catalog's.
enum class Metric : std::uint8_t {
  TflopsPerSecPerGpu,
  TokensPerSecPerGpu,
  TokensPerSecTotal,
  ScalingEfficiencyPct,
  StepTimeSeconds,
  StepTimeMeanMs,
  StepTimeP50Ms,
  StepTimeP95Ms,
  InitialLoss,
  FinalLoss,
  LossDecreased,
  LossCurveSlope,
  EvalLoss,
  StepsToTarget,
  TimeToTargetSeconds,
  Last10StepsModelTflopsPerGpuAvg,
  Last10StepsStepTimeMsAvg,
  Last10StepsTokensPerSecondPerGpuAvg,
  PeakMemoryGb,
  CheckpointSaveSeconds,
  CheckpointLoadSeconds,
  StalledSteps,
  StallSeconds,
  TimeLostPct,
};
inline constexpr std::size_t kMetricCount = 24;

enum class Better { Higher, Lower, Neither };
enum class GatedBy { TestMetric, CheckpointResume };

struct MetricSpec {
  Metric id;
  std::string_view name;  // without "training."
  std::string_view unit;  // as the report prints it ("" for a count or a flag)
  Better better;
  GatedBy gated_by;
  bool interval;  // steady_state gives an interval estimate (a speed gate decided on it)
  bool speed;     // throughput or step time: depends on the machine, needs a calibration
  int decimals;   // the most decimals a figure of it is shown with (-1: 6 significant digits)
  // Fleet mode scores a node on it: one figure per question (tokens/s: TFLOP/s and the totals are
  // the same figure scaled; the median step time: the mean follows the throughput, p95 and the
  // last-10 averages of a short run are its noisiest; the loss).
  bool fleet_scored;
};

// In report order.
const std::vector<MetricSpec>& metric_catalog();
// Every metric name the suite can produce, "training."-less, in report (catalog) order.
const std::vector<std::string>& tracked_metric_names();
// nullptr for a name the catalog does not have.
const MetricSpec* find_metric(std::string_view name);
// The figures of the loss and of the target it reaches (the model's progress, not the machine's
// speed): an extended run's come from its configured steps alone (statistics/run_figures.hpp).
const std::vector<Metric>& loss_metrics();
// The catalog's entry of a metric.
const MetricSpec& spec_of(Metric m);
// Its name, without "training." ("tokens_per_sec_per_gpu").
inline std::string_view to_string(Metric m) {
  return spec_of(m).name;
}
// The metric of a name; nullopt for a name the catalog does not have.
std::optional<Metric> metric_from_name(std::string_view name);

// How a figure of a metric prints everywhere (messages, the report, compare, cards): at most the
// metric's decimals (MaxText prints its figures with 3; a rate of thousands needs 1), trailing
// zeros dropped; a figure too small for those decimals keeps 2 significant digits; a name the
// catalog does not have, or a non-finite figure, as short_number prints it.
std::string format_figure(Metric m, double v);
std::string format_figure(std::string_view metric, double v);

}  // namespace cvs
