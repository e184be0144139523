// Calibration: threshold files derived from repeated runs on a known-good node or cluster, where
// `cvs calibrate` keeps them, and how a run's provenance is held against theirs.
//
// The rule (per sweep and speed metric, over the repeats' steady-state intervals [lo_i, hi_i]
// around estimates e_i):
//   every repeat must have the interval, with lo_i > 0 and (hi_i - lo_i) / e_i < 50 %, or the
//     metric is refused (`cvs calibrate` exits 1 and writes nothing, naming the metric, the repeat,
//     its spread and the steps that would narrow it); a metric no repeat has an interval for is
//     named as not calibrated (in the output and in `_calibration`), never dropped silently;
//   centre = median(e), spread = 1.4826 x MAD(e), h = median half-width,
//   worst  = max_i centre / lo_i (a min gate) or max_i hi_i / centre (a max gate),
//   slack  = max(1 + (k x spread + h) / centre, 1.05 x worst, 1 + min_slack),
//   refused when slack > 1 + max_slack (the repeats are too noisy for a gate every one clears);
//   min gate (throughput):  value = centre / slack
//   max gate (step time):   value = centre x slack
// so every repeat clears its gate with its whole interval and 5 % to spare, a noisier repeat (a
// wider interval: h and worst only grow) never tightens a gate, and a run slower by more than the
// slack (at most 2x by default) lies on the wrong side. Defaults: k = 3, min_slack from the
// config (statistics.calibration_min_slack_pct, 5 % for GPUs: three sessions of a 1B model on a
// real H200 differed by 0.3 % with intervals of +- 0.7 %, so the noise rule gives 1.058 and a GPU 7 %
// slow lies wholly below its gate, which a 15 % floor hid; the CPU default's 80 %: a shared 2-core
// machine swings up to 1.5x between runs), max_slack 100 %.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cvs/config/thresholds.hpp"

#include <chrono>
#include <functional>
#include "cvs/verdicts/evaluation.hpp"

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
  double min_slack_pct = 5.0;  // the config's statistics.calibration_min_slack_pct
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

// Why the repeats cannot be calibrated (a repeat that did not complete a sweep, an interval that
// is missing, reaches 0 or is too wide, a slack over its ceiling): `cvs calibrate` exits 1 and
// writes nothing.
// `short_repeats`: the repeats (0-based) that more steps would fix (an interval missing for too
// few or too correlated steps, one that reaches 0 or is too wide): `cvs calibrate` runs those again
// with more steps within its budget before it refuses.
class CalibrationRefused : public std::runtime_error {
 public:
  explicit CalibrationRefused(const std::string& why, std::vector<std::size_t> short_repeats = {})
      : std::runtime_error(why), short_repeats(std::move(short_repeats)) {}
  std::vector<std::size_t> short_repeats;
};

// A threshold file from the results.json of each repeat: the base file's gates that are not
// speed metrics (loss, trend, ratios) are kept; every speed metric of calibrated_metrics() gets a
// gate by the rule, and `_calibration` holds the rule, the raw statistics per sweep and metric,
// the metrics it could not calibrate (`not_calibrated`: sweep -> metric -> why, keyed as
// `statistics` is) and the provenance of the first repeat. Throws CalibrationRefused (see the rule).
nlohmann::ordered_json build_calibration(const std::vector<Results>& results,
                                         const std::optional<ThresholdFile>& base,
                                         const CalibrationRule& rule, const std::string& date);

// The budget cvs calibrate's repeats run under.
struct CalibrationBudget {
  double seconds = 15 * 60;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::string date;  // the calibration's date
};
// Runs repeat i (0-based) again with `factor` x the steps, replacing its results and its seconds;
// false when it did not pass.
// `why`: the refusal it answers.
using RerunRepeat = std::function<bool(std::size_t i, long long factor, const std::string& why)>;
// build_calibration, and while it refuses for what more steps fix (CalibrationRefused::short_repeats)
// each such repeat runs again with twice its steps when its expected time (twice its last) fits
// what is left of the budget; then the refusal, with the time it would need and what is left.
// `seconds` empty (--from: sessions already run): no repeat runs again. `extended`: one line per
// repeat run again (the refusal it answered, its steps, its time).
nlohmann::ordered_json calibrate_extending(std::vector<Results>& results, std::vector<double>& seconds,
                                           const std::optional<ThresholdFile>& base,
                                           const CalibrationRule& rule, const CalibrationBudget& budget,
                                           const RerunRepeat& rerun, std::vector<std::string>& extended);
// "41 s", "3 min 20 s".
std::string minutes_and_seconds(double s);

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
