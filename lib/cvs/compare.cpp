#include "cvs/compare.hpp"

#include <cmath>
#include <stdexcept>

#include "cvs/metric_catalog.hpp"
#include "cvs/metrics.hpp"

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
void check_schema(const nlohmann::ordered_json& r, const char* which) {
  if (!r.is_object() || r.value("schema_version", 0) != 1 || !r.contains("sweeps"))
    throw std::invalid_argument(std::string(which) + " is not a cvs results.json (schema_version 1)");
}
}  // namespace

Comparison compare_results(const nlohmann::ordered_json& o, const nlohmann::ordered_json& n, double tol) {
  check_schema(o, "the old file");
  check_schema(n, "the new file");
  Comparison c;
  for (auto s = n["sweeps"].begin(); s != n["sweeps"].end(); ++s) {
    if (!o["sweeps"].contains(s.key())) {
      c.notes.push_back("sweep " + s.key() + " is new (no baseline)");
      continue;
    }
    const auto om = o["sweeps"][s.key()].value("metrics", nlohmann::ordered_json::object());
    const auto nm = s.value().value("metrics", nlohmann::ordered_json::object());
    for (const auto& m : tracked_metric_names()) {
      const bool in_old = om.contains(m) && om[m].is_number(), in_new = nm.contains(m) && nm[m].is_number();
      if (in_old != in_new) {
        c.notes.push_back(s.key() + " training." + m +
                          (in_old ? " missing in the new run" : " not in the baseline"));
        continue;
      }
      if (!in_old) continue;
      MetricDelta d{s.key(), m, om[m].get<double>(), nm[m].get<double>(), 0, false};
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
      c.deltas.push_back(d);
    }
  }
  for (auto s = o["sweeps"].begin(); s != o["sweeps"].end(); ++s)
    if (!n["sweeps"].contains(s.key()))
      c.notes.push_back("sweep " + s.key() + " of the baseline did not run");
  return c;
}

nlohmann::ordered_json to_json(const Comparison& c, double tol) {
  nlohmann::ordered_json j;
  j["tolerance_pct"] = tol;
  j["regression"] = c.any_regression();
  auto arr = nlohmann::ordered_json::array();
  for (const auto& d : c.deltas)
    arr.push_back({{"sweep", d.sweep},
                   {"metric", "training." + d.metric},
                   {"old", d.old_value},
                   {"new", d.new_value},
                   {"delta_pct", std::isfinite(d.delta_pct) ? nlohmann::ordered_json(d.delta_pct)
                                                            : nlohmann::ordered_json(nullptr)},
                   {"regression", d.regression}});
  j["deltas"] = arr;
  j["notes"] = c.notes;
  return j;
}

}  // namespace cvs
