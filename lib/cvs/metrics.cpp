#include "cvs/metrics.hpp"

#include "cvs/metric_catalog.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cvs {

std::optional<double> RunMetrics::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

const std::vector<std::string>& tracked_metric_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const auto& m : metric_catalog()) names.emplace_back(m.name);
    return names;
  }();
  return v;
}

void check_step_series(const std::vector<StepRecord>& steps, const std::string& source) {
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const auto prev = steps[i - 1].step, cur = steps[i].step;
    if (cur == prev)
      throw MetricsError(
          source + ": step " + std::to_string(cur) +
          " appears twice: two runs wrote into one log (duplicates are rejected, not averaged)");
    if (cur < prev)
      throw MetricsError(source + ": step numbers go down (" + std::to_string(prev) + " then " +
                         std::to_string(cur) + "): the log holds a restarted or blended run");
  }
}

double percentile(std::vector<double> v, double pct) {
  if (v.empty()) return std::nan("");
  // The same value as sorting and interpolating between ranks lo and hi, in linear time: the
  // lo-th element by selection, the hi-th as the least of those after it.
  const double rank = pct / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(lo), v.end());
  const double a = v[lo];
  const double b = hi == lo ? a : *std::min_element(v.begin() + static_cast<long>(lo) + 1, v.end());
  return a + (b - a) * (rank - static_cast<double>(lo));
}

std::optional<double> least_squares_slope(const std::vector<LossPoint>& pts) {
  if (pts.size() < 2) return std::nullopt;
  double mx = 0, my = 0;
  for (const auto& p : pts) {
    mx += static_cast<double>(p.step);
    my += p.loss;
  }
  mx /= static_cast<double>(pts.size());
  my /= static_cast<double>(pts.size());
  double sxy = 0, sxx = 0;
  for (const auto& p : pts) {
    const double dx = static_cast<double>(p.step) - mx;
    sxy += dx * (p.loss - my);
    sxx += dx * dx;
  }
  if (sxx == 0) return std::nullopt;
  return sxy / sxx;
}

namespace {

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Work over time: sum(rate_i x seconds_i) / sum(seconds_i), the total work of the steps over
// their total time. A mean of rates would let one short step inflate the figure. MaxText prints
// rates with 3 decimals: a step printed as 0.000 adds (almost) no work but still its time, so one
// rounded step moves the figure by its share of the time instead of making it 0.
std::optional<double> work_over_time(const std::vector<double>& rates, const std::vector<double>& secs) {
  if (rates.empty() || rates.size() != secs.size()) return std::nullopt;
  double work = 0, time = 0;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    work += rates[i] * secs[i];
    time += secs[i];
  }
  return time > 0 ? std::optional<double>(work / time) : std::nullopt;
}

}  // namespace

namespace {

// Loss figures of the whole run: first and last, whether it fell, the first non-finite step.
void loss_metrics(RunMetrics& m, const std::vector<StepRecord>& steps) {
  auto set = [&](const std::string& k, double v) { m.values[k] = v; };
  for (const auto& s : steps) {
    m.loss_curve.push_back({s.step, s.loss});
    if (!std::isfinite(s.loss) && !m.nonfinite_loss) {
      m.nonfinite_loss = true;
      m.first_nonfinite_step = s.step;
    }
  }
  set("initial_loss", steps.front().loss);
  set("final_loss", steps.back().loss);
  // NaN compares false: a run with a non-finite loss never reports a decrease.
  set("loss_decreased",
      (std::isfinite(steps.back().loss) && steps.back().loss < steps.front().loss && !m.nonfinite_loss)
          ? 1.0
          : 0.0);
}

// Throughput and step time over the steady-state steps (warm-up dropped by position).
void speed_metrics(RunMetrics& m, const std::vector<StepRecord>& steps, const MetricsContext& ctx) {
  auto set = [&](const std::string& k, double v) { m.values[k] = v; };
  // Steady state: drop the warm-up records by position; rampup and profiler boundary steps carry
  // no throughput.
  std::vector<const StepRecord*> steady;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i < kWarmupSteps) continue;
    const auto& s = steps[i];
    if (s.rampup || s.profiler_boundary || !s.seconds) continue;
    steady.push_back(&s);
  }
  m.warmup_dropped = std::min(kWarmupSteps, steps.size());
  if (steady.empty()) {
    m.notes.push_back("no steady-state steps after dropping " + std::to_string(kWarmupSteps) +
                      " warm-up steps: throughput and step-time metrics need more steps");
  } else {
    std::vector<double> secs, tflops, tokens, tflops_secs, tokens_secs;
    for (const auto* s : steady) {
      secs.push_back(*s->seconds);
      if (s->tflops_per_device) {
        tflops.push_back(*s->tflops_per_device);
        tflops_secs.push_back(*s->seconds);
      }
      if (s->tokens_per_device) {
        tokens.push_back(*s->tokens_per_device);
        tokens_secs.push_back(*s->seconds);
      }
    }
    m.step_times_s = secs;
    set("step_time_seconds", mean(secs));
    set("step_time_mean_ms", mean(secs) * 1000.0);
    set("step_time_p50_ms", percentile(secs, 50) * 1000.0);
    set("step_time_p95_ms", percentile(secs, 95) * 1000.0);
    if (auto t = work_over_time(tflops, tflops_secs)) set("tflops_per_sec_per_gpu", *t);
    if (auto k = work_over_time(tokens, tokens_secs)) {
      set("tokens_per_sec_per_gpu", *k);
      const double total = *k * ctx.num_nodes * ctx.gpus_per_node;
      set("tokens_per_sec_total", total);
      const auto& b = ctx.scaling_baseline;
      if (b.tokens_per_sec_total > 0 && b.num_nodes > 0 && ctx.distributed) {
        const double ideal = b.tokens_per_sec_total * static_cast<double>(ctx.num_nodes) / b.num_nodes;
        set("scaling_efficiency_pct", 100.0 * total / ideal);
      }
    }
    const std::size_t n10 = std::min<std::size_t>(10, steady.size());
    std::vector<double> l_secs(secs.end() - static_cast<long>(n10), secs.end());
    set("last_10_steps_step_time_ms_avg", mean(l_secs) * 1000.0);
    if (tflops.size() >= n10)
      set("last_10_steps_model_tflops_per_gpu_avg",
          mean(std::vector<double>(tflops.end() - static_cast<long>(n10), tflops.end())));
    if (tokens.size() >= n10)
      set("last_10_steps_tokens_per_second_per_gpu_avg",
          mean(std::vector<double>(tokens.end() - static_cast<long>(n10), tokens.end())));
  }
}

void loss_curve_metrics(RunMetrics& m, const std::vector<StepRecord>& steps, const MetricsContext& ctx) {
  auto set = [&](const std::string& k, double v) { m.values[k] = v; };
  // Loss curve: the first and the last step, every sample_every-th step and the milestone steps
  // that the run reached (as CVS samples it: a short run still has a slope, its end counts).
  const auto& lc = ctx.loss_curve;
  for (const auto& s : steps) {
    const bool edge = &s == &steps.front() || &s == &steps.back();
    const bool sampled = edge || (lc.sample_every > 0 && s.step % lc.sample_every == 0);
    const bool milestone =
        std::find(lc.milestone_steps.begin(), lc.milestone_steps.end(), s.step) != lc.milestone_steps.end();
    if ((sampled || milestone) && std::isfinite(s.loss)) m.sampled_curve.push_back({s.step, s.loss});
  }
  if (auto slope = least_squares_slope(m.sampled_curve))
    set("loss_curve_slope", *slope);
  else
    m.notes.push_back("loss_curve_slope needs >= 2 sampled points (every " + std::to_string(lc.sample_every) +
                      " steps); the run has " + std::to_string(m.sampled_curve.size()));
}

void convergence_metrics(RunMetrics& m, const std::vector<StepRecord>& steps,
                         const std::vector<EvalRecord>& evals, const MetricsContext& ctx) {
  auto set = [&](const std::string& k, double v) { m.values[k] = v; };
  // Convergence: first step whose target loss is <= target_value.
  const auto& cv = ctx.convergence;
  if (cv.target_value > 0) {
    const bool use_eval = cv.target_metric == "eval_loss" || (cv.target_metric == "auto" && !evals.empty());
    std::optional<long long> hit;
    if (use_eval) {
      for (const auto& e : evals)
        if (e.loss <= cv.target_value) {
          hit = e.after_step;
          break;
        }
    } else {
      for (const auto& s : steps)
        if (s.loss <= cv.target_value) {
          hit = s.step;
          break;
        }
    }
    if (hit) {
      set("steps_to_target", static_cast<double>(*hit));
      double t = 0;
      for (const auto& s : steps) {
        if (s.step > *hit) break;
        t += s.seconds.value_or(0.0);
      }
      set("time_to_target_seconds", t);
    } else {
      m.notes.push_back(std::string("convergence target ") + std::to_string(cv.target_value) +
                        " not reached by " + (use_eval ? "eval" : "training") + " loss");
    }
  }
}

}  // namespace

RunMetrics compute_metrics(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx) {
  RunMetrics m;
  if (steps.empty()) {
    m.notes.push_back("no 'completed step' lines in the log");
    return m;
  }
  loss_metrics(m, steps);
  speed_metrics(m, steps, ctx);
  loss_curve_metrics(m, steps, ctx);
  if (!evals.empty()) m.values["eval_loss"] = evals.back().loss;
  convergence_metrics(m, steps, evals, ctx);
  m.steady = steady_state(steps, ctx.num_nodes * ctx.gpus_per_node, ctx.confidence);
  if (!m.steady.found) m.notes.push_back(m.steady.why);
  if (!m.steady.note.empty()) m.notes.push_back(m.steady.note);
  return m;
}

}  // namespace cvs
