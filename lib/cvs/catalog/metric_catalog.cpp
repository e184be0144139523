#include "cvs/catalog/metric_catalog.hpp"

#include <cmath>

#include "cvs/base/format.hpp"

namespace cvs {

const std::vector<MetricSpec>& metric_catalog() {
  using B = Better;
  using G = GatedBy;
  using M = Metric;
  static const std::vector<MetricSpec> v = {
      {M::TflopsPerSecPerGpu, "tflops_per_sec_per_gpu", "TFLOP/s", B::Higher, G::TestMetric, true, true, 3,
       false},
      {M::TokensPerSecPerGpu, "tokens_per_sec_per_gpu", "tok/s", B::Higher, G::TestMetric, true, true, 1,
       true},
      {M::TokensPerSecTotal, "tokens_per_sec_total", "tok/s", B::Higher, G::TestMetric, true, true, 1, false},
      {M::ScalingEfficiencyPct, "scaling_efficiency_pct", "%", B::Higher, G::TestMetric, true, true, 2,
       false},
      {M::StepTimeSeconds, "step_time_seconds", "s", B::Lower, G::TestMetric, true, true, 5, false},
      {M::StepTimeMeanMs, "step_time_mean_ms", "ms", B::Lower, G::TestMetric, true, true, 3, false},
      {M::StepTimeP50Ms, "step_time_p50_ms", "ms", B::Lower, G::TestMetric, true, true, 3, true},
      {M::StepTimeP95Ms, "step_time_p95_ms", "ms", B::Lower, G::TestMetric, true, true, 3, false},
      {M::InitialLoss, "initial_loss", "", B::Neither, G::TestMetric, false, false, 3,
       false},  // the model's, not the cluster's
      {M::FinalLoss, "final_loss", "", B::Lower, G::TestMetric, false, false, 3, true},
      {M::LossDecreased, "loss_decreased", "", B::Higher, G::TestMetric, false, false, 0, false},
      {M::LossCurveSlope, "loss_curve_slope", "/step", B::Lower, G::TestMetric, false, false, -1, false},
      {M::EvalLoss, "eval_loss", "", B::Lower, G::TestMetric, false, false, 3, false},
      {M::StepsToTarget, "steps_to_target", "steps", B::Lower, G::TestMetric, false, false, 0, false},
      {M::TimeToTargetSeconds, "time_to_target_seconds", "s", B::Lower, G::TestMetric, false, false, 3,
       false},
      {M::Last10StepsModelTflopsPerGpuAvg, "last_10_steps_model_tflops_per_gpu_avg", "TFLOP/s", B::Higher,
       G::TestMetric, false, true, 3, false},
      {M::Last10StepsStepTimeMsAvg, "last_10_steps_step_time_ms_avg", "ms", B::Lower, G::TestMetric, false,
       true, 3, false},
      {M::Last10StepsTokensPerSecondPerGpuAvg, "last_10_steps_tokens_per_second_per_gpu_avg", "tok/s",
       B::Higher, G::TestMetric, false, true, 1, false},
      {M::PeakMemoryGb, "peak_memory_gb", "GB", B::Lower, G::TestMetric, false, false, 3, false},
      {M::CheckpointSaveSeconds, "checkpoint_save_seconds", "s", B::Lower, G::CheckpointResume, false, false,
       3, false},
      {M::CheckpointLoadSeconds, "checkpoint_load_seconds", "s", B::Lower, G::CheckpointResume, false, false,
       3, false},
      // Stalls (statistics/metrics.hpp Stall): how many, the seconds they cost over a normal step,
      // and that as a share of the steps' time. Events, not speed: no calibration needed.
      {M::StalledSteps, "stalled_steps", "", B::Lower, G::TestMetric, false, false, 0, false},
      {M::StallSeconds, "stall_seconds", "s", B::Lower, G::TestMetric, false, false, 3, false},
      {M::TimeLostPct, "time_lost_pct", "%", B::Lower, G::TestMetric, false, false, 2, false},
  };
  return v;
}

const std::vector<Metric>& loss_metrics() {
  static const std::vector<Metric> v = {Metric::InitialLoss,        Metric::FinalLoss, Metric::LossDecreased,
                                        Metric::LossCurveSlope,     Metric::EvalLoss,  Metric::StepsToTarget,
                                        Metric::TimeToTargetSeconds};
  return v;
}

// The table is in the enum's order (MetricCatalog.IsInTheEnumsOrder): spec_of is an index.
const MetricSpec& spec_of(Metric m) {
  return metric_catalog()[static_cast<std::size_t>(m)];
}

std::optional<Metric> metric_from_name(std::string_view name) {
  if (const auto* s = find_metric(name)) return s->id;
  return std::nullopt;
}

const MetricSpec* find_metric(std::string_view name) {
  for (const auto& m : metric_catalog())
    if (m.name == name) return &m;
  return nullptr;
}

const std::vector<std::string>& tracked_metric_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const auto& m : metric_catalog()) names.emplace_back(m.name);
    return names;
  }();
  return v;
}

std::string format_figure(Metric m, double v) {
  const int decimals = spec_of(m).decimals;
  if (!std::isfinite(v) || decimals < 0) return short_number(v);
  if (v != 0 && std::fabs(v) < std::pow(10.0, -decimals)) return fmt::format("{:.2g}", v);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string format_figure(std::string_view metric, double v) {
  if (metric.substr(0, 9) == "training.") metric.remove_prefix(9);
  const auto m = metric_from_name(metric);
  return m ? format_figure(*m, v) : short_number(v);
}

}  // namespace cvs
