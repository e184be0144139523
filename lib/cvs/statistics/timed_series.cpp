// The timed steps a steady state is read from (TimedSeries), and the names and words around it
// (step_stats.hpp declares them; step_stats.cpp finds the steady state).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvs/base/enum_names.hpp"
#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/statistics/step_stats.hpp"

namespace cvs {

std::string drift_note(const Drift& d, std::size_t steps) {
  return fmt::format(
      "the step time drifts {:+.0f} % across the {} steady-state steps (slope t = {:.1f}): no single speed",
      100 * d.relative, steps, d.t);
}

std::size_t batch_count(std::size_t n) {
  if (n < 4) return 0;
  const auto b = static_cast<std::size_t>(std::floor(std::sqrt(static_cast<double>(n))));
  return std::clamp<std::size_t>(b, 2, 20);
}

const std::vector<std::string>& interval_metric_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const auto& m : metric_catalog())
      if (m.interval) names.emplace_back(m.name);
    return names;
  }();
  return v;
}

bool has_interval(const std::string& metric) {
  const auto& v = interval_metric_names();
  return std::find(v.begin(), v.end(), metric) != v.end();
}

std::string SteadyState::why_none(const std::string& metric) const {
  if (auto it = missing.find(metric); it != missing.end()) return it->second;
  if (!why.empty()) return why;
  return "the run gives no " + metric + " interval";
}

const char* to_string(TimeSource s) {
  static constexpr EnumWord<TimeSource> kWords[] = {{TimeSource::TokensRate, "tokens_rate"},
                                                    {TimeSource::PrintedSeconds, "printed_seconds"},
                                                    {TimeSource::FullPrecision, "full_precision"}};
  return word_of(kWords, s);
}

bool is_timed(const StepRecord& r) {
  return r.seconds && std::isfinite(*r.seconds) && !r.profiler_boundary && !r.rampup;
}

void TimedSeries::add(const StepRecord& r) {
  if (runs_.empty() || r.step != last_step_ + 1) runs_.emplace_back(size(), r.step);
  last_step_ = r.step;
  seconds_.push_back(*r.seconds);
  tokens_.push_back(r.tokens_per_device.value_or(std::nan("")));
  tflops_.push_back(r.tflops_per_device.value_or(std::nan("")));
}

long long TimedSeries::step_at(std::size_t i) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), i,
                             [](std::size_t v, const auto& run) { return v < run.first; });
  --it;
  return it->second + static_cast<long long>(i - it->first);
}

SteadyState steady_state(const std::vector<StepRecord>& steps, int devices, double confidence) {
  TimedSeries timed;
  for (const auto& r : steps)
    if (is_timed(r)) timed.add(r);
  return steady_state(timed, devices, confidence);
}

}  // namespace cvs
