// Threshold files (<stem>_threshold.json): cells keyed by exact sweep key, each a
// {"training.<metric>": {"kind": ..., "value": ...}} map, and their evaluation.
#pragma once

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include "cvs/config/calibration_file.hpp"

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
  // "_calibration" of a file `cvs calibrate` wrote: rule, statistics and provenance.
  std::optional<CalibrationSection> calibration;
  const std::vector<ThresholdSpec>* cell(const std::string& sweep_key) const;
};

ThresholdFile load_thresholds(const std::filesystem::path& file);
ThresholdFile parse_thresholds(const std::string& text, const std::filesystem::path& file);

}  // namespace cvs
