// Calibration: threshold files derived from repeated runs on a known-good node or cluster, where
// `cvs calibrate` keeps them, and how a run's provenance is held against theirs.
//
// The rule (per sweep and speed metric, over the repeats' steady-state estimates):
//   centre = median, spread = 1.4826 x MAD (robust to one bad repeat),
//   h      = median half-width of the repeats' own intervals,
//   slack  = max(1 + (k x spread + h) / centre, 1.05 x centre / the worst repeat's interval end),
//            clamped to [1 + min_slack, 1 + max_slack]
//   min gate (throughput):  value = centre / slack
//   max gate (step time):   value = centre x slack
// so every repeat, and a run like them, clears its gate with its whole interval, and a run slower
// by more than the slack (at most 2x by default) lies on the wrong side. Defaults: k = 3,
// min_slack from the config (statistics.calibration_min_slack_pct, 15 %; the CPU default's 80 %:
// a shared 2-core machine swings up to 1.5x between runs), max_slack 100 %.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cvs/config/thresholds.hpp"
#include "cvs/results/evaluation.hpp"

namespace cvs {

struct Results;  // results_file.hpp

// $CVS_CALIBRATION_DIR, else $XDG_STATE_HOME/cvs-maxtext/calibration, else
// ~/.local/state/cvs-maxtext/calibration: outside any checkout, one folder per user.
std::filesystem::path default_calibration_dir();
// <dir>/<config stem>[@<cluster stem>]_threshold.json
std::filesystem::path default_calibration_file(const std::filesystem::path& config,
                                               const std::filesystem::path& cluster);

struct CalibrationRule {
  double k = 3.0;
  double min_slack_pct = 15.0;  // the config's statistics.calibration_min_slack_pct
  double max_slack_pct = 100.0;
};

// One gated speed metric: its kind and which way is better. Throughput (tokens and TFLOP/s per
// GPU) and the mean step time; the p50/p95 step times stay recorded with their intervals: MaxText
// logs step seconds with 3 decimals, and on short runs the tail is noise (gate p95 by hand on
// long GPU runs).
struct CalibratedMetric {
  const char* name;
  ThresholdKind kind;  // MinTokS / Min (higher is better) or MaxMs (lower is better)
};
const std::vector<CalibratedMetric>& calibrated_metrics();

// A threshold file from the results.json of each repeat: the base file's gates that are not
// speed metrics (loss, trend, ratios) are kept; every speed metric of calibrated_metrics() that
// each repeat produced gets a gate by the rule, and `_calibration` holds the rule, the raw
// statistics per sweep and metric, and the provenance of the first repeat.
// Throws std::runtime_error when a repeat did not complete a sweep.
nlohmann::ordered_json build_calibration(const std::vector<Results>& results,
                                         const std::optional<ThresholdFile>& base,
                                         const CalibrationRule& rule, const std::string& date);

// A run's provenance fields (results.json "provenance_fields", made by the session: MaxText and
// JAX versions, device kind, CPU model and count, GPUs, nodes x gpus_per_node, gpu_name, XLA
// flags, the effective config's sha256, the container image and its id) against its
// calibration's: every field whose value differs, in the calibration's order.
struct ProvenanceDifference {
  std::string field;
  std::string calibrated;
  std::string now;
};
std::vector<ProvenanceDifference> provenance_differences(const nlohmann::ordered_json& calibrated,
                                                         const nlohmann::ordered_json& now);

}  // namespace cvs
