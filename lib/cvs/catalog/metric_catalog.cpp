#include "cvs/catalog/metric_catalog.hpp"

namespace cvs {

const std::vector<MetricSpec>& metric_catalog() {
  using B = Better;
  using G = GatedBy;
  static const std::vector<MetricSpec> v = {
      {"tflops_per_sec_per_gpu", "TFLOP/s", B::Higher, G::TestMetric, true, true},
      {"tokens_per_sec_per_gpu", "tok/s", B::Higher, G::TestMetric, true, true},
      {"tokens_per_sec_total", "tok/s", B::Higher, G::TestMetric, true, true},
      {"scaling_efficiency_pct", "%", B::Higher, G::TestMetric, false, true},
      {"step_time_seconds", "s", B::Lower, G::TestMetric, true, true},
      {"step_time_mean_ms", "ms", B::Lower, G::TestMetric, true, true},
      {"step_time_p50_ms", "ms", B::Lower, G::TestMetric, true, true},
      {"step_time_p95_ms", "ms", B::Lower, G::TestMetric, true, true},
      {"initial_loss", "", B::Neither, G::TestMetric, false, false},  // the model's, not the cluster's
      {"final_loss", "", B::Lower, G::TestMetric, false, false},
      {"loss_decreased", "", B::Higher, G::TestMetric, false, false},
      {"loss_curve_slope", "/step", B::Lower, G::TestMetric, false, false},
      {"eval_loss", "", B::Lower, G::TestMetric, false, false},
      {"steps_to_target", "steps", B::Lower, G::TestMetric, false, false},
      {"time_to_target_seconds", "s", B::Lower, G::TestMetric, false, false},
      {"last_10_steps_model_tflops_per_gpu_avg", "TFLOP/s", B::Higher, G::TestMetric, false, true},
      {"last_10_steps_step_time_ms_avg", "ms", B::Lower, G::TestMetric, false, true},
      {"last_10_steps_tokens_per_second_per_gpu_avg", "tok/s", B::Higher, G::TestMetric, false, true},
      {"peak_memory_gb", "GB", B::Lower, G::TestMetric, false, false},
      {"checkpoint_save_seconds", "s", B::Lower, G::CheckpointResume, false, false},
      {"checkpoint_load_seconds", "s", B::Lower, G::CheckpointResume, false, false},
  };
  return v;
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

}  // namespace cvs
