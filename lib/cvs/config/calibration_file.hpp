// The "_calibration" section of a threshold file `cvs calibrate` writes: one typed record, one
// writer (to_json) and one reader (calibration_from_json, through JsonIn: a wrong key is a
// ConfigError with the file, its JSON pointer and the fix). The threshold loader, fleet mode's
// baseline, cvs certify's inputs, the history and cvs calibrate itself all read it through this.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cvs {

// One sweep's speed metric as its repeats measured it.
struct CalibratedFigure {
  std::size_t n = 0;                     // repeats
  double median = 0;                     // the centre of their steady-state estimates
  double mad_sigma = 0;                  // 1.4826 x their median absolute deviation
  double median_half_width = 0;          // of their intervals
  double worst_repeat = 1;               // the farthest interval end over the centre
  double slack_by_noise = 1, slack = 1;  // the gate: centre / slack (higher is better) or centre x slack
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();  // each repeat's [estimate, lo, hi]
};

struct CalibrationSection {
  // 1: the first with a version (files before it have none and read as 1: the same keys).
  static constexpr int kSchemaVersion = 1;
  int schema_version = kSchemaVersion;
  std::string rule;
  double k = 0, min_slack_pct = 0, max_slack_pct = 0;
  std::size_t repeats = 0;
  std::string date;
  std::string base_threshold_file;
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();       // the repeats' (results.json's)
  std::map<std::string, std::map<std::string, CalibratedFigure>> statistics;  // sweep -> metric -> figure
  std::map<std::string, std::map<std::string, std::string>> not_calibrated;   // sweep -> metric -> why
  // The repeats cvs calibrate ran again with more steps before it could calibrate, each in words
  // ("repeat 3: ...: ran again with 2x the steps (58 a sweep) in 41 s").
  std::vector<std::string> extended;
};

nlohmann::ordered_json to_json(const CalibrationSection& c);
// `j` is the "_calibration" object of `file`; a newer schema_version than this tool reads is an
// error with the fix (a newer cvs wrote it).
CalibrationSection calibration_from_json(const nlohmann::ordered_json& j, const std::string& file);

}  // namespace cvs
