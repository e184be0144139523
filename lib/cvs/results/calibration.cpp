#include "cvs/results/calibration.hpp"

#include "cvs/results/results_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

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

struct Repeats {
  std::vector<double> estimates, half_widths;
  std::vector<ordered_json> runs;  // [estimate, lo, hi] per repeat
};

// The metric's steady-state interval in every repeat; nullopt when a repeat lacks it.
std::optional<Repeats> collect(const std::vector<Results>& results, const std::string& sweep,
                               const std::string& metric) {
  Repeats r;
  for (const auto& res : results) {
    const SweepRecord* sw = res.sweep(sweep);
    if (!sw || !sw->steady_state) return std::nullopt;
    const IntervalRecord* iv = sw->steady_state->interval(metric);
    if (!iv || std::isnan(iv->estimate) || std::isnan(iv->lo) || std::isnan(iv->hi)) return std::nullopt;
    const double e = iv->estimate, lo = iv->lo, hi = iv->hi;
    if (!(e > 0)) return std::nullopt;  // a rate rounded to 0 says nothing
    r.estimates.push_back(e);
    r.half_widths.push_back((hi - lo) / 2);
    r.runs.push_back({e, lo, hi});
  }
  return r;
}

ordered_json gate_for(const CalibratedMetric& m, const Repeats& r, const CalibrationRule& rule,
                      ordered_json& stats) {
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
  const double slack = std::clamp(noise, 1.0 + rule.min_slack_pct / 100.0, 1.0 + rule.max_slack_pct / 100.0);
  const double value = higher_better ? centre / slack : centre * slack;
  stats = {{"n", r.estimates.size()}, {"median", centre}, {"mad_sigma", spread}, {"median_half_width", h},
           {"slack_by_noise", noise}, {"slack", slack},   {"runs", r.runs}};
  return {{"kind", to_string(m.kind)}, {"value", value}};
}

}  // namespace

ordered_json build_calibration(const std::vector<Results>& results, const std::optional<ThresholdFile>& base,
                               const CalibrationRule& rule, const std::string& date) {
  if (results.empty()) throw std::runtime_error("no repeats to calibrate on");
  ordered_json out = ordered_json::object();
  ordered_json stats = ordered_json::object();
  for (const auto& [sweep, first] : results[0].sweeps) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      const SweepRecord* sw = results[i].sweep(sweep);
      if (!sw || sw->status != SweepStatus::Completed)
        throw std::runtime_error("repeat " + std::to_string(i + 1) + ": sweep " + sweep +
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
      auto r = collect(results, sweep, m.name);
      if (!r) continue;
      ordered_json st;
      cell["training." + std::string(m.name)] = gate_for(m, *r, rule, st);
      stats[sweep][m.name] = st;
    }
    out[sweep] = cell;
  }
  ordered_json cal;
  cal["rule"] =
      std::string("per sweep and speed metric over the repeats' steady-state estimates: ") +
      "centre = median, spread = 1.4826 x MAD, h = median interval half-width, " +
      "slack = max(1 + (k x spread + h) / centre, 1.05 x the worst repeat's interval end / centre) " +
      "clamped to [1 + min_slack, 1 + max_slack]; min gate = centre / slack, max gate = centre x slack";
  cal["k"] = rule.k;
  cal["min_slack_pct"] = rule.min_slack_pct;
  cal["max_slack_pct"] = rule.max_slack_pct;
  cal["repeats"] = results.size();
  cal["date"] = date;
  cal["base_threshold_file"] = base ? base->file.string() : std::string();
  cal["provenance"] = results[0].provenance_fields.value_or(ordered_json::object());
  cal["statistics"] = stats;
  ordered_json file = {{"_comment",
                        "Written by cvs calibrate: speed gates measured on this node or cluster (see "
                        "_calibration), the base threshold file's other gates kept as they were."}};
  for (auto it = out.begin(); it != out.end(); ++it) file[it.key()] = it.value();
  file["_calibration"] = cal;
  return file;
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
