#include "cvs/verdicts/evaluation.hpp"

#include <cmath>

#include "cvs/base/format.hpp"
#include "cvs/catalog/metric_catalog.hpp"

namespace cvs {
namespace {

std::string fmt(double v) {
  return short_number(v);
}

// A figure of `metric` as the catalog prints it.
std::string fig(const std::string& metric, double v) {
  return format_figure(metric, v);
}

std::string unit(ThresholdKind k) {
  if (k == ThresholdKind::MaxMs) return " ms";
  if (k == ThresholdKind::MinTokS) return " tok/s";
  return "";
}

}  // namespace

bool is_speed_metric(const std::string& metric) {
  const auto* spec = find_metric(metric);
  return spec && spec->speed;
}

bool loss_curve_gated(const LossCurve& lc, bool enforce_thresholds) {
  return lc.enforce && enforce_thresholds;
}

namespace {

// Where the interval [lo, hi] lies against the gate: +1 clears it, -1 wholly fails it, 0 straddles.
int interval_side(const Interval& i, const ThresholdSpec& s) {
  switch (s.kind) {
    case ThresholdKind::Min:
    case ThresholdKind::MinTokS:
      return i.lo >= s.value ? 1 : (i.hi < s.value ? -1 : 0);
    case ThresholdKind::Max:
    case ThresholdKind::MaxMs:
      return i.hi <= s.value ? 1 : (i.lo > s.value ? -1 : 0);
    case ThresholdKind::Within: {
      const double tol = std::fabs(s.value) * *s.tolerance_pct / 100.0;
      if (i.lo >= s.value - tol && i.hi <= s.value + tol) return 1;
      return (i.hi < s.value - tol || i.lo > s.value + tol) ? -1 : 0;
    }
    default:
      return 0;
  }
}

bool interval_kind(ThresholdKind k) {
  return k == ThresholdKind::Min || k == ThresholdKind::MinTokS || k == ThresholdKind::Max ||
         k == ThresholdKind::MaxMs || k == ThresholdKind::Within;
}

// Decides a speed metric on its steady-state interval (see evaluate_metric).
void decide_on_interval(Evaluation& e, const RunMetrics& run, bool enforce) {
  const auto& s = *e.spec;
  auto it = run.steady.intervals.find(e.metric);
  if (it == run.steady.intervals.end()) {
    e.outcome = enforce ? Outcome::Inconclusive : Outcome::Record;
    e.message = fig(e.metric, *e.actual) + unit(s.kind) + " against " + to_string(s.kind) + " " +
                fig(e.metric, s.value) + unit(s.kind) + ": no interval to decide on (" +
                run.steady.why_none(e.metric) + ")";
    return;
  }
  const Interval& i = it->second;
  e.interval = i;
  if (s.value != 0) {
    const bool higher_better = s.kind == ThresholdKind::Min || s.kind == ThresholdKind::MinTokS;
    e.margin_pct = (higher_better ? 1 : -1) * (i.estimate - s.value) / std::fabs(s.value) * 100.0;
  }
  const int side = interval_side(i, s);
  const auto f = [&](double v) { return fig(e.metric, v); };
  std::string bound = to_string(s.kind) + " " + f(s.value) + unit(s.kind);
  if (s.kind == ThresholdKind::Within) bound = f(s.value) + " +/- " + fmt(*s.tolerance_pct) + "%";
  // The point figure (every step after the first two) is another number for the same metric:
  // said as such, after the one the verdict used.
  std::string point;
  if (run.point_steps && f(*e.actual) != f(i.estimate))
    point = " (point figure, steps " + std::to_string(run.point_steps->first) + "-" +
            std::to_string(run.point_steps->second) + ": " + f(*e.actual) + ")";
  std::string cmp = f(i.estimate) + unit(s.kind) + ", interval [" + f(i.lo) + ", " + f(i.hi) + "] over " +
                    std::to_string(run.steady.n) + " steady-state steps from step " +
                    std::to_string(run.steady.first_step) + ": " +
                    (side > 0   ? "clears "
                     : side < 0 ? "wholly fails "
                                : "straddles ") +
                    bound + point;
  if (run.steady.drift)
    cmp += "; " + drift_note(*run.steady.drift, run.steady.n) +
           ", so the interval spans the trend's start and end levels";
  const Outcome o = side > 0 ? Outcome::Pass : (side < 0 ? Outcome::Fail : Outcome::Inconclusive);
  if (!enforce) {
    e.outcome = Outcome::Record;
    e.message = cmp + " (enforce_thresholds is false: would be " + to_string(o) + ")";
    return;
  }
  e.outcome = o;
  e.message = cmp;
}

// Decides a metric on its value (everything but the speed metrics' interval gates).
void decide_on_point(Evaluation& e, const RunMetrics& run, bool enforce) {
  const auto& s = *e.spec;
  const double a = *e.actual;
  bool ok = false;
  std::string cmp;
  switch (s.kind) {
    case ThresholdKind::Min:
    case ThresholdKind::MinTokS:
      ok = a >= s.value;
      cmp = fig(e.metric, a) + unit(s.kind) + (ok ? " >= " : " < ") + fig(e.metric, s.value) + unit(s.kind);
      break;
    case ThresholdKind::Max:
    case ThresholdKind::MaxMs:
      ok = a <= s.value;
      cmp = fig(e.metric, a) + unit(s.kind) + (ok ? " <= " : " > ") + fig(e.metric, s.value) + unit(s.kind);
      break;
    case ThresholdKind::Within: {
      const double tol = std::fabs(s.value) * *s.tolerance_pct / 100.0;
      ok = std::fabs(a - s.value) <= tol;
      // The absolute bounds too: a reader should not have to work out what +/- 2 % of 7.3 is.
      cmp = fig(e.metric, a) + (ok ? " within " : " outside ") + fig(e.metric, s.value) + " +/- " +
            fmt(*s.tolerance_pct) + "% [" + fig(e.metric, s.value - tol) + ", " +
            fig(e.metric, s.value + tol) + "]";
      break;
    }
    case ThresholdKind::MinRatio: {
      auto ref = run.get(s.reference);
      if (!ref || *ref == 0) {
        e.outcome = enforce ? Outcome::Fail : Outcome::Record;
        e.message =
            "reference metric " + s.reference + " was not produced (or is 0): ratio cannot be checked";
        return;
      }
      const double ratio = a / *ref;
      ok = ratio >= s.value;
      cmp = fig(e.metric, a) + " / " + s.reference + " " + fig(s.reference, *ref) + " = " + fmt(ratio) +
            (ok ? " >= " : " < ") + fig(e.metric, s.value) + " (needs >= " + fig(e.metric, s.value * *ref) +
            ")";
      break;
    }
    case ThresholdKind::Info:
      e.outcome = Outcome::Record;
      e.message = fig(e.metric, a) + " (info: recorded, placeholder " + fig(e.metric, s.value) + ")";
      return;
  }
  if (!std::isfinite(a)) {
    ok = false;
    cmp = "non-finite value " + fig(e.metric, a) + " never passes (" + to_string(s.kind) + " " +
          fig(e.metric, s.value) + ")";
  }
  if (!enforce) {
    e.outcome = Outcome::Record;
    e.message =
        cmp + " (enforce_thresholds is false: would " + to_string(ok ? Outcome::Pass : Outcome::Fail) + ")";
    return;
  }
  e.outcome = ok ? Outcome::Pass : Outcome::Fail;
  e.message = cmp;
}

}  // namespace

Evaluation evaluate_metric(const std::string& metric, const RunMetrics& run,
                           const std::vector<ThresholdSpec>* cell, bool enforce, bool calibrated) {
  Evaluation e;
  e.metric = metric;
  e.actual = run.get(metric);
  if (cell)
    for (const auto& s : *cell)
      if (s.metric == metric) e.spec = s;
  if (!e.actual) {
    // A speed gate the run gave no figure for (too few step records to measure) is no pass: it is
    // undecided, as a figure without an interval is.
    if (e.spec && e.spec->kind != ThresholdKind::Info && is_speed_metric(metric)) {
      e.outcome = enforce ? Outcome::Inconclusive : Outcome::Record;
      e.message = "no figure and no interval to decide on against " + to_string(e.spec->kind) + " " +
                  fig(metric, e.spec->value) + unit(e.spec->kind) + " (" + run.steady.why_none(metric) + ")";
      return e;
    }
    e.outcome = Outcome::NA;
    e.message = "not produced by this run";
    return e;
  }
  const double a = *e.actual;
  if (is_speed_metric(metric) && (!e.spec || e.spec->kind == ThresholdKind::Info)) {
    e.outcome = Outcome::Record;
    e.message = fig(metric, a) + " (" + (calibrated ? kNotGatedByCalibration : kUncalibrated) + ")";
    return e;
  }
  if (!e.spec) {
    e.outcome = Outcome::Record;
    e.message = fig(metric, a) + (cell ? " (no threshold for this metric in the cell)"
                                       : " (no threshold cell for this sweep key)");
    return e;
  }
  const auto& s = *e.spec;
  if (std::isfinite(a) && interval_kind(s.kind) && has_interval(metric)) {
    decide_on_interval(e, run, enforce);
    return e;
  }
  decide_on_point(e, run, enforce);
  return e;
}

Evaluation evaluate_loss_curve(const RunMetrics& run, const LossCurve& lc, bool enforce_thresholds) {
  Evaluation e;
  e.metric = to_string(Metric::LossCurveSlope);
  e.actual = run.get(e.metric);
  if (!e.actual) {
    e.outcome = Outcome::NA;
    e.message = "not produced by this run";
    return e;
  }
  const bool ok = *e.actual < lc.max_slope;
  e.message = "slope " + fmt(*e.actual) + (ok ? " < " : " >= ") + "max_slope " + fmt(lc.max_slope) +
              " over " + std::to_string(run.sampled_curve.size()) + " sampled points";
  if (!loss_curve_gated(lc, enforce_thresholds)) {
    e.outcome = Outcome::Record;
    e.message += !lc.enforce ? " (loss_curve.enforce is false" : " (enforce_thresholds is false";
    e.message += ": would " + to_string(ok ? Outcome::Pass : Outcome::Fail) + ")";
    return e;
  }
  e.outcome = ok ? Outcome::Pass : Outcome::Fail;
  return e;
}

std::vector<std::string> notes_about(const std::string& metric, const std::vector<std::string>& notes) {
  // The words a note uses for a metric's family (metrics.cpp's notes): its own name always.
  std::vector<std::string> words = {metric};
  const auto has = [&](const char* part) { return metric.find(part) != std::string::npos; };
  if (has("tflops")) words.insert(words.end(), {"TFLOP/s", "throughput"});
  if (has("tokens")) words.insert(words.end(), {"tokens/s", "Tokens/s", "throughput"});
  if (has("step_time")) words.insert(words.end(), {"step-time", "step time"});
  if (has("loss")) words.emplace_back("loss");
  if (has("target")) words.emplace_back("target");
  if (has("checkpoint")) words.emplace_back("checkpoint");
  if (has("memory")) words.emplace_back("memory");
  if (is_speed_metric(metric)) words.emplace_back("steady-state");
  std::vector<std::string> out;
  for (const auto& n : notes)
    for (const auto& w : words)
      if (n.find(w) != std::string::npos) {
        out.push_back(n);
        break;
      }
  return out;
}

}  // namespace cvs
