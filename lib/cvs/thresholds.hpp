// Threshold files (<stem>_threshold.json): cells keyed by exact sweep key, each a
// {"training.<metric>": {"kind": ..., "value": ...}} map, and their evaluation.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cvs/metrics.hpp"

namespace cvs {

enum class ThresholdKind { Min, Max, MaxMs, MinTokS, Within, MinRatio, Info };
std::string to_string(ThresholdKind k);

struct ThresholdSpec {
  std::string metric;  // without the "training." prefix
  ThresholdKind kind = ThresholdKind::Info;
  double value = 0.0;
  std::optional<double> tolerance_pct;  // within
  std::string reference;                // min_ratio: another metric, without "training."
};

struct ThresholdFile {
  std::filesystem::path file;
  std::map<std::string, std::vector<ThresholdSpec>> cells;  // sweep key -> specs in file order
  std::map<std::string, std::string> comments;              // "_node_count_comment" etc.
  const std::vector<ThresholdSpec>* cell(const std::string& sweep_key) const;
};

ThresholdFile load_thresholds(const std::filesystem::path& file);
ThresholdFile parse_thresholds(const std::string& text, const std::filesystem::path& file);

enum class Outcome { Pass, Fail, Record, NA };
std::string to_string(Outcome o);

struct Evaluation {
  std::string metric;  // without "training."
  std::optional<double> actual;
  std::optional<ThresholdSpec> spec;  // the cell's spec for this metric, if any
  Outcome outcome = Outcome::Record;
  std::string message;  // one sentence: the comparison and why this outcome
};

// Evaluates one metric of a run against its cell (nullptr when the sweep key has no cell).
// PASS/FAIL only when enforce is true and the spec's kind is not info; RECORD otherwise;
// N/A when the run did not produce the metric. A non-finite actual fails every enforced kind.
Evaluation evaluate_metric(const std::string& metric, const RunMetrics& run,
                           const std::vector<ThresholdSpec>* cell, bool enforce);

}  // namespace cvs
