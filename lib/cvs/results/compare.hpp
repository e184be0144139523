// Run-to-run comparison of two results.json files: per sweep and metric, old, new, delta % and
// a regression flag. A speed metric both sessions decided on a steady-state interval is compared
// by its estimates: intervals that overlap are no evidence of a change ("within noise", never a
// regression); intervals that separate are a regression when the new estimate is worse by more
// than the tolerance. Every other metric is compared by its value against the tolerance.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/catalog/metric_catalog.hpp"

namespace cvs {

struct Results;  // results_file.hpp

// Which direction is an improvement for a tracked metric (without "training."): the catalog's.
Better better_direction(const std::string& metric);

struct MetricDelta {
  std::string sweep;
  std::string metric;
  double old_value = 0;
  double new_value = 0;
  double delta_pct = 0;  // (new - old) / |old| * 100; 0 when old is 0 and new is 0
  bool regression = false;
  // Both sessions' steady-state intervals, when the values are their estimates.
  std::optional<std::pair<double, double>> old_interval, new_interval;
  bool within_noise = false;  // the intervals overlap
};

struct Comparison {
  std::vector<MetricDelta> deltas;
  std::vector<std::string> notes;  // sweeps or metrics present in only one of the files
  bool any_regression() const;
};

// Per sweep of the new session and tracked metric: old, new, delta and whether it regressed.
Comparison compare_results(const Results& old_results, const Results& new_results, double tolerance_pct);
nlohmann::ordered_json to_json(const Comparison& c, double tolerance_pct);

}  // namespace cvs
