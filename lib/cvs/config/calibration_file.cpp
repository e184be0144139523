#include "cvs/config/calibration_file.hpp"

#include <tuple>

#include "cvs/config/json_fields.hpp"
#include "cvs/config/json_in.hpp"

namespace cvs {
namespace {

using J = nlohmann::ordered_json;
constexpr const char* kFix = "pass a calibration file `cvs calibrate` wrote, or calibrate again";

// Required: what a gate or fleet mode's baseline is made of; the rest optional (a hand-made
// baseline of medians and spreads reads too), each of its type when present.
constexpr auto kFigureFields = std::make_tuple(
    optional_field("n", &CalibratedFigure::n), field("median", &CalibratedFigure::median),
    field("mad_sigma", &CalibratedFigure::mad_sigma),
    optional_field("median_half_width", &CalibratedFigure::median_half_width),
    optional_field("worst_repeat", &CalibratedFigure::worst_repeat),
    optional_field("slack_by_noise", &CalibratedFigure::slack_by_noise),
    optional_field("slack", &CalibratedFigure::slack), optional_field("runs", &CalibratedFigure::runs));

constexpr auto kSectionFields = std::make_tuple(
    optional_field("schema_version", &CalibrationSection::schema_version),  // files before it: 1
    optional_field("rule", &CalibrationSection::rule), optional_field("k", &CalibrationSection::k),
    optional_field("min_slack_pct", &CalibrationSection::min_slack_pct),
    optional_field("max_slack_pct", &CalibrationSection::max_slack_pct),
    optional_field("repeats", &CalibrationSection::repeats),
    optional_field("date", &CalibrationSection::date),
    optional_field("base_threshold_file", &CalibrationSection::base_threshold_file),
    optional_field("provenance", &CalibrationSection::provenance),
    optional_field("extended", &CalibrationSection::extended));

}  // namespace

J to_json(const CalibrationSection& c) {
  J j = J::object();
  write_fields(j, c, kSectionFields);
  J stats = J::object();
  for (const auto& [sweep, metrics] : c.statistics)
    for (const auto& [metric, f] : metrics) {
      J one = J::object();
      write_fields(one, f, kFigureFields);
      stats[sweep][metric] = one;
    }
  j["statistics"] = stats;
  J none = J::object();
  for (const auto& [sweep, metrics] : c.not_calibrated)
    for (const auto& [metric, why] : metrics) none[sweep][metric] = why;
  j["not_calibrated"] = none;
  return j;
}

CalibrationSection calibration_from_json(const J& j, const std::string& file) {
  const JsonIn in(j, "/_calibration", file, kFix);
  if (!j.is_object()) in.fail("/_calibration", "is not an object");
  CalibrationSection c;
  read_fields(in, c, kSectionFields);
  if (c.schema_version < 1 || c.schema_version > CalibrationSection::kSchemaVersion)
    in.fail("/_calibration/schema_version",
            "is " + std::to_string(c.schema_version) + "; this cvs reads calibrations up to schema " +
                std::to_string(CalibrationSection::kSchemaVersion) + " (a newer cvs wrote it: use that one)");
  const JsonIn stats = in.object("statistics");
  for (const auto& [sweep, metrics] : in.at("statistics").items()) {
    const JsonIn per_sweep = stats.object(sweep.c_str());
    for (const auto& [metric, figure] : metrics.items()) {
      (void)figure;
      read_fields(per_sweep.object(metric.c_str()), c.statistics[sweep][metric], kFigureFields);
    }
  }
  if (in.has("not_calibrated")) {
    const JsonIn none = in.object("not_calibrated");
    for (const auto& [sweep, metrics] : in.at("not_calibrated").items()) {
      const JsonIn per_sweep = none.object(sweep.c_str());
      for (const auto& [metric, why] : metrics.items()) {
        (void)why;
        c.not_calibrated[sweep][metric] = per_sweep.req_str(metric.c_str());
      }
    }
  }
  return c;
}

}  // namespace cvs
