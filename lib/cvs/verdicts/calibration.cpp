#include "cvs/verdicts/calibration.hpp"

#include "cvs/results/results_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "cvs/base/format.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace cvs {

fs::path default_calibration_dir() {
  if (const char* d = std::getenv("CVS_CALIBRATION_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
    return fs::path(x) / "cvs-maxtext" / "calibration";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".local" / "state" / "cvs-maxtext" / "calibration";
}

fs::path default_calibration_file(const fs::path& config, const fs::path& cluster) {
  std::string name = config.stem().string();
  if (!cluster.empty()) name += "@" + cluster.stem().string();
  return default_calibration_dir() / (name + "_threshold.json");
}

const std::vector<CalibratedMetric>& calibrated_metrics() {
  static const std::vector<CalibratedMetric> v = {
      {"tokens_per_sec_per_gpu", ThresholdKind::MinTokS},
      {"tflops_per_sec_per_gpu", ThresholdKind::Min},
      {"step_time_mean_ms", ThresholdKind::MaxMs},
  };
  return v;
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline constexpr double kMaxRelativeWidth = 0.5;

std::string pct(double v) {
  return fmt::format("{:.1f} %", 100 * v);
}

struct Repeats {
  std::vector<double> estimates, half_widths;
  std::vector<ordered_json> runs;  // [estimate, lo, hi] per repeat
};

// Why a repeat's sweep has no interval for `metric` (its steady state's own words).
std::string why_missing(const SweepRecord* sw, const std::string& metric) {
  if (!sw || !sw->steady_state) return "no steady state recorded";
  for (const auto& [name, why] : sw->steady_state->missing)
    if (name == metric) return why;
  return sw->steady_state->why.empty() ? "no interval recorded" : sw->steady_state->why;
}

// The metric's steady-state interval in every repeat; nullopt when no repeat has one (the metric
// is not calibratable); CalibrationRefused when some have it and some do not, or when one reaches
// 0 or spans half its estimate.
std::optional<Repeats> collect(const std::vector<Results>& results, const std::string& sweep,
                               const std::string& metric, std::string& not_calibrated) {
  Repeats r;
  std::vector<std::string> missing;
  std::vector<std::size_t> missing_at;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const SweepRecord* sw = results[i].sweep(sweep);
    const IntervalRecord* iv = sw && sw->steady_state ? sw->steady_state->interval(metric) : nullptr;
    if (!iv || std::isnan(iv->estimate) || std::isnan(iv->lo) || std::isnan(iv->hi)) {
      missing.push_back("repeat " + std::to_string(i + 1) + ": " + why_missing(sw, metric));
      missing_at.push_back(i);
      continue;
    }
    const std::string name = sweep + " " + metric + ": repeat " + std::to_string(i + 1);
    const double e = iv->estimate, lo = iv->lo, hi = iv->hi, width = (hi - lo) / e;
    if (!(lo > 0) || !(e > 0))
      throw CalibrationRefused(name + "'s interval [" + short_number(lo) + ", " + short_number(hi) +
                                   "] reaches 0: its steps vary too much for a gate; run more steps (or find "
                                   "what disturbs the node)",
                               {i});
    if (width >= kMaxRelativeWidth) {
      const double steps = sw->steady_state->steps;
      const double need =
          std::ceil(steps * (width / (0.8 * kMaxRelativeWidth)) * (width / (0.8 * kMaxRelativeWidth)));
      throw CalibrationRefused(name + "'s interval [" + short_number(lo) + ", " + short_number(hi) +
                                   "] spans " + pct(width) + " of its estimate " + short_number(e) +
                                   " (at most " + pct(kMaxRelativeWidth) + "): too noisy to calibrate on; " +
                                   (steps > 0 ? "run about " + short_number(need) +
                                                    " steady steps instead of " + short_number(steps)
                                              : std::string("run more steady steps")),
                               {i});
    }
    r.estimates.push_back(e);
    r.half_widths.push_back((hi - lo) / 2);
    r.runs.push_back({e, lo, hi});
  }
  if (missing.size() == results.size()) {
    not_calibrated = missing.front();
    for (std::size_t i = 1; i < missing.size(); ++i) not_calibrated += "; " + missing[i];
    return std::nullopt;
  }
  if (!missing.empty())
    throw CalibrationRefused(sweep + " " + metric + ": " + missing.front() +
                                 " (the other repeats have one): "
                                 "calibrate on runs with enough steady steps, or more steps per run",
                             missing_at);
  return r;
}

ordered_json gate_for(const CalibratedMetric& m, const std::string& sweep, const Repeats& r,
                      const CalibrationRule& rule, CalibratedFigure& stats) {
  const double centre = median(r.estimates);
  std::vector<double> dev;
  for (double e : r.estimates) dev.push_back(std::fabs(e - centre));
  const double spread = 1.4826 * median(dev);
  const double h = median(r.half_widths);
  const bool higher_better = m.kind != ThresholdKind::MaxMs;
  // Every repeat, a known-good run, clears the gate with its whole interval and 5 % to spare.
  double worst = 1.0;
  for (const auto& run : r.runs)
    worst = std::max(worst, higher_better ? centre / run[1].get<double>() : run[2].get<double>() / centre);
  const double noise = std::max(1.0 + (rule.k * spread + h) / centre, 1.05 * worst);
  const double slack = std::max(noise, 1.0 + rule.min_slack_pct / 100.0);
  if (slack > 1.0 + rule.max_slack_pct / 100.0 + 1e-12)
    throw CalibrationRefused(sweep + " " + m.name + ": the repeats need a slack of " + short_number(slack) +
                             "x (centre " + short_number(centre) + ", spread " + short_number(spread) +
                             ", median half-width " + short_number(h) + ", worst repeat " +
                             short_number(worst) +
                             "x) for every repeat to clear its gate, over the ceiling of " +
                             short_number(1.0 + rule.max_slack_pct / 100.0) +
                             "x: too noisy to calibrate; run more steps or repeats, "
                             "or find what disturbs the node");
  const double value = higher_better ? centre / slack : centre * slack;
  stats = {r.estimates.size(), centre, spread, h, worst, noise, slack, r.runs};
  return {{"kind", to_string(m.kind)}, {"value", value}};
}

}  // namespace

ordered_json build_calibration(const std::vector<Results>& results, const std::optional<ThresholdFile>& base,
                               const CalibrationRule& rule, const std::string& date) {
  if (results.empty()) throw std::runtime_error("no repeats to calibrate on");
  ordered_json out = ordered_json::object();
  CalibrationSection cal;
  for (const auto& [sweep, first] : results[0].sweeps) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      const SweepRecord* sw = results[i].sweep(sweep);
      if (!sw || sw->status != SweepStatus::Completed)
        throw CalibrationRefused("repeat " + std::to_string(i + 1) + ": sweep " + sweep +
                                 " did not complete (" + to_string(sw ? sw->status : SweepStatus::NotRun) +
                                 "): calibrate on a known-good node or cluster");
    }
    ordered_json cell = ordered_json::object();
    if (base)
      if (const auto* specs = base->cell(sweep))
        for (const auto& s : *specs) {
          if (is_speed_metric(s.metric)) continue;
          ordered_json spec = {{"kind", to_string(s.kind)}, {"value", s.value}};
          if (s.tolerance_pct) spec["tolerance_pct"] = *s.tolerance_pct;
          if (!s.reference.empty()) spec["reference"] = "training." + s.reference;
          cell["training." + s.metric] = spec;
        }
    for (const auto& m : calibrated_metrics()) {
      std::string why;
      auto r = collect(results, sweep, m.name, why);
      if (!r) {
        cal.not_calibrated[sweep][m.name] = why;
        continue;
      }
      cell["training." + std::string(m.name)] = gate_for(m, sweep, *r, rule, cal.statistics[sweep][m.name]);
    }
    out[sweep] = cell;
  }
  cal.rule = std::string(
      "per sweep and speed metric over the repeats' steady-state intervals (each present, above 0 "
      "and narrower than half its estimate): centre = median, spread = 1.4826 x MAD, h = median "
      "interval half-width, worst = the farthest interval end over the centre, slack = max(1 + (k x "
      "spread + h) / centre, 1.05 x worst, 1 + min_slack), refused above 1 + max_slack; min gate = "
      "centre / slack, max gate = centre x slack");
  cal.k = rule.k;
  cal.min_slack_pct = rule.min_slack_pct;
  cal.max_slack_pct = rule.max_slack_pct;
  cal.repeats = results.size();
  cal.date = date;
  cal.base_threshold_file = base ? base->file.string() : std::string();
  cal.provenance = results[0].provenance_fields.value_or(ordered_json::object());
  ordered_json file = {{"_comment",
                        "Written by cvs calibrate: speed gates measured on this node or cluster (see "
                        "_calibration), the base threshold file's other gates kept as they were."}};
  for (auto it = out.begin(); it != out.end(); ++it) file[it.key()] = it.value();
  file["_calibration"] = to_json(cal);
  return file;
}

std::string minutes_and_seconds(double s) {
  const long long n = std::llround(s);
  return n < 60 ? std::to_string(n) + " s"
                : std::to_string(n / 60) + " min" + (n % 60 ? " " + std::to_string(n % 60) + " s" : "");
}

ordered_json calibrate_extending(std::vector<Results>& results, std::vector<double>& seconds,
                                 const std::optional<ThresholdFile>& base, const CalibrationRule& rule,
                                 const CalibrationBudget& budget, const RerunRepeat& rerun,
                                 std::vector<std::string>& extended) {
  std::vector<long long> factor(results.size(), 1);
  for (;;) {
    try {
      return build_calibration(results, base, rule, budget.date);
    } catch (const CalibrationRefused& e) {
      if (e.short_repeats.empty() || seconds.size() != results.size()) throw;  // not a steps fix, or --from
      for (const std::size_t i : e.short_repeats) {
        const double spent =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - budget.started).count();
        const double need = seconds[i] * 2;  // twice the steps: about twice the time
        const std::string again = "repeat " + std::to_string(i + 1) + " again with " +
                                  std::to_string(factor[i] * 2) + "x the steps";
        if (spent + need > budget.seconds)
          throw CalibrationRefused(
              std::string(e.what()) + "; running " + again + " needs about " + minutes_and_seconds(need) +
              ", and " + minutes_and_seconds(std::max(0.0, budget.seconds - spent)) + " of the " +
              minutes_and_seconds(budget.seconds) + " budget is left (--budget-minutes)");
        factor[i] *= 2;
        if (!rerun(i, factor[i], e.what())) throw CalibrationRefused(again + " did not pass");
        extended.push_back("repeat " + std::to_string(i + 1) + ": " + e.what() + ": ran again with " +
                           std::to_string(factor[i]) + "x the steps in " + minutes_and_seconds(seconds[i]));
      }
    }
  }
}

std::vector<ProvenanceDifference> provenance_differences(const ordered_json& calibrated,
                                                         const ordered_json& now) {
  std::vector<ProvenanceDifference> d;
  auto str = [](const ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (auto it = calibrated.begin(); it != calibrated.end(); ++it) {
    const std::string was = str(it.value());
    const std::string is = now.contains(it.key()) ? str(now[it.key()]) : std::string("(absent)");
    if (was != is) d.push_back({it.key(), was, is});
  }
  return d;
}

}  // namespace cvs
