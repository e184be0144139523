#include "cvs/results/compare.hpp"

#include <cmath>

#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {

Better better_direction(const std::string& m) {
  const auto* spec = find_metric(m);
  return spec ? spec->better : Better::Neither;
}

bool Comparison::any_regression() const {
  for (const auto& d : deltas)
    if (d.regression) return true;
  return false;
}

namespace {

// A tracked metric of a sweep; nullptr when absent or not finite (null in the file).
const double* figure(const SweepRecord& s, const std::string& metric) {
  const double* v = s.metric(metric);
  return v && std::isfinite(*v) ? v : nullptr;
}

// The sweep's steady-state interval of a metric, when it has a finite one.
const IntervalRecord* interval_of(const SweepRecord& s, const std::string& metric) {
  const IntervalRecord* i = s.steady_state ? s.steady_state->interval(metric) : nullptr;
  return i && std::isfinite(i->estimate) && std::isfinite(i->lo) && std::isfinite(i->hi) ? i : nullptr;
}

MetricDelta delta_of(const std::string& sweep, const std::string& m, double old_value, double new_value,
                     double tol) {
  MetricDelta d;
  d.sweep = sweep;
  d.metric = m;
  d.old_value = old_value;
  d.new_value = new_value;
  if (d.old_value != 0)
    d.delta_pct = (d.new_value - d.old_value) / std::fabs(d.old_value) * 100.0;
  else if (d.new_value != 0)
    d.delta_pct = d.new_value > 0 ? INFINITY : -INFINITY;
  switch (better_direction(m)) {
    case Better::Higher:
      d.regression = d.delta_pct < -tol;
      break;
    case Better::Lower:
      d.regression = d.delta_pct > tol;
      break;
    case Better::Neither:
      break;
  }
  return d;
}

}  // namespace

Comparison compare_results(const Results& o, const Results& n, double tol) {
  Comparison c;
  for (const auto& [key, ns] : n.sweeps) {
    const SweepRecord* os = o.sweep(key);
    if (!os) {
      c.notes.push_back("sweep " + key + " is new (no baseline)");
      continue;
    }
    for (const auto& m : tracked_metric_names()) {
      const double *ov = figure(*os, m), *nv = figure(ns, m);
      if ((ov != nullptr) != (nv != nullptr)) {
        c.notes.push_back(key + " training." + m + (ov ? " missing in the new run" : " not in the baseline"));
        continue;
      }
      if (!ov) continue;
      const IntervalRecord *oi = interval_of(*os, m), *ni = interval_of(ns, m);
      if (!oi || !ni) {
        c.deltas.push_back(delta_of(key, m, *ov, *nv, tol));
        continue;
      }
      MetricDelta d = delta_of(key, m, oi->estimate, ni->estimate, tol);
      d.old_interval = std::pair{oi->lo, oi->hi};
      d.new_interval = std::pair{ni->lo, ni->hi};
      d.within_noise = oi->lo <= ni->hi && ni->lo <= oi->hi;
      if (d.within_noise) d.regression = false;
      c.deltas.push_back(d);
    }
  }
  for (const auto& [key, os] : o.sweeps)
    if (!n.sweep(key)) c.notes.push_back("sweep " + key + " of the baseline did not run");
  return c;
}

nlohmann::ordered_json to_json(const Comparison& c, double tol) {
  nlohmann::ordered_json j;
  j["tolerance_pct"] = tol;
  j["regression"] = c.any_regression();
  auto arr = nlohmann::ordered_json::array();
  for (const auto& d : c.deltas) {
    arr.push_back({{"sweep", d.sweep},
                   {"metric", "training." + d.metric},
                   {"old", d.old_value},
                   {"new", d.new_value},
                   {"delta_pct", std::isfinite(d.delta_pct) ? nlohmann::ordered_json(d.delta_pct)
                                                            : nlohmann::ordered_json(nullptr)},
                   {"regression", d.regression}});
    if (d.old_interval) {
      arr.back()["old_interval"] =
          nlohmann::ordered_json::array({d.old_interval->first, d.old_interval->second});
      arr.back()["new_interval"] =
          nlohmann::ordered_json::array({d.new_interval->first, d.new_interval->second});
      arr.back()["within_noise"] = d.within_noise;
    }
  }
  j["deltas"] = arr;
  j["notes"] = c.notes;
  return j;
}

}  // namespace cvs
