#include "cvs/verdicts/early_stop.hpp"
#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/statistics/run_figures.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cvs/statistics/metrics.hpp"

namespace cvs {

EarlyStopPlan EarlyStopPlan::make(long long steps, long long cap, long long min_steady, bool beyond_speed,
                                  double confidence) {
  EarlyStopPlan p;
  p.configured_steps = steps;
  p.cap = std::max(cap, steps);
  p.first_stop = beyond_speed ? steps : 0;
  p.confidence = confidence;
  for (long long l = std::max(2 * min_steady, 10LL); l < p.cap; l *= 2)
    if (l >= p.first_stop) p.looks.push_back(l);
  p.looks.push_back(p.cap);
  p.per_look_confidence = 1.0 - (1.0 - confidence) / static_cast<double>(p.looks.size());
  return p;
}

EarlyStopper::EarlyStopper(EarlyStopPlan plan, std::vector<ThresholdSpec> speed_gates, MetricsContext ctx)
    : plan_(std::move(plan)), gates_(std::move(speed_gates)), ctx_(std::move(ctx)) {
  ctx_.confidence = plan_.per_look_confidence;
}

bool EarlyStopper::operator()(const std::vector<StepRecord>& head) {
  const auto n = static_cast<long long>(head.size());
  if (!plan_.looks_at_all(gates_.size()) || next_look_ >= plan_.looks.size() || n < plan_.looks[next_look_])
    return false;
  while (next_look_ < plan_.looks.size() && n >= plan_.looks[next_look_]) ++next_look_;
  if (n >= plan_.cap) return false;  // the run completes by itself
  ++looks_taken_;
  const auto m = compute_metrics(head, {}, ctx_);
  std::string decided;
  for (const auto& g : gates_) {
    const auto e = evaluate_metric(g.metric, m, &gates_, true);
    if (e.outcome != Outcome::Pass && e.outcome != Outcome::Fail) return false;
    decided += (decided.empty() ? "" : ", ") + g.metric + " " + to_string(e.outcome);
  }
  if (plan_.max_half_width > 0) {
    const auto it = m.steady.intervals.find(std::string(to_string(Metric::TokensPerSecPerGpu)));
    if (it == m.steady.intervals.end() || !(it->second.estimate > 0)) return false;
    const double half = (it->second.hi - it->second.lo) / 2 / it->second.estimate;
    if (!(half <= plan_.max_half_width)) return false;
    decided +=
        (decided.empty() ? "" : ", ") + fmt::format("tokens_per_sec_per_gpu +-{:.1f} % (at most {:.1f} %)",
                                                    100 * half, 100 * plan_.max_half_width);
  }
  decided_at_ = head.size();
  reason_ = std::string(gates_.empty() ? "precise enough" : "every speed gate decisive") + " after " +
            std::to_string(n) + " steps (look " + std::to_string(looks_taken_) + " of at most " +
            std::to_string(plan_.looks.size()) + "): " + decided;
  return true;
}

namespace {

bool gated(const ThresholdSpec& s, const MetricEvaluated& evaluated) {
  return s.kind != ThresholdKind::Info && (!evaluated || evaluated(s.metric));
}

}  // namespace

std::vector<ThresholdSpec> speed_gates(const std::vector<ThresholdSpec>* cell,
                                       const MetricEvaluated& evaluated) {
  std::vector<ThresholdSpec> v;
  if (cell)
    for (const auto& s : *cell)
      if (gated(s, evaluated) && is_speed_metric(s.metric)) v.push_back(s);
  return v;
}

bool gates_beyond_speed(const std::vector<ThresholdSpec>* cell, const MetricEvaluated& evaluated) {
  if (cell)
    for (const auto& s : *cell)
      if (gated(s, evaluated) && !is_speed_metric(s.metric)) return true;
  return false;
}

}  // namespace cvs
