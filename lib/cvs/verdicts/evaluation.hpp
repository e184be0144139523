// A run's metric against its threshold cell: PASS / FAIL / RECORD / N/A / INCONCLUSIVE, with the
// interval and margin the verdict used, and the loss_curve block's gate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cvs/catalog/outcome.hpp"
#include "cvs/config/thresholds.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {

// INCONCLUSIVE: the metric's confidence interval straddles the threshold (or the run has no
// steady state to build one on): the run gives no evidence either way.

struct Evaluation {
  std::string metric;                 // without "training."
  std::optional<double> actual;       // the point figure of the spec's definition (results.json metrics)
  std::optional<ThresholdSpec> spec;  // the cell's spec for this metric, if any
  Outcome outcome = Outcome::Record;
  std::string message;               // one sentence: the comparison and why this outcome
  std::optional<Interval> interval;  // speed metrics: the steady-state interval the verdict used
  std::optional<double> margin_pct;  // (estimate - threshold) / threshold, signed so > 0 is good

  // The figure the verdict was decided on: the interval's estimate when it had one, else the point.
  std::optional<double> decided() const { return interval ? std::optional(interval->estimate) : actual; }
};

// Throughput and step-time metrics: they depend on the machine's speed, so only a calibration of
// the machine under test can gate them (see cvs calibrate).
bool is_speed_metric(const std::string& metric);
inline constexpr const char* kUncalibrated = "uncalibrated on this machine: run `cvs calibrate`";
// A speed metric a calibration file does not gate (p50/p95, tokens/s total): recorded beside the
// gated ones, never said to be uncalibrated when the session is gated by a calibration.
inline constexpr const char* kNotGatedByCalibration =
    "recorded, not gated by this calibration (it gates tokens/s and TFLOP/s per GPU and the mean step time)";

// Evaluates one metric of a run against its cell (nullptr when the sweep key has no cell).
// PASS/FAIL only when enforce is true and the spec's kind is not info; RECORD otherwise;
// N/A when the run did not produce the metric. A non-finite actual fails every enforced kind.
// A speed metric with a min/max/within gate is decided on its steady-state interval: PASS when
// the whole interval clears the threshold, FAIL when it lies wholly on the wrong side,
// INCONCLUSIVE when it straddles it or the run has no steady state.
Evaluation evaluate_metric(const std::string& metric, const RunMetrics& run,
                           const std::vector<ThresholdSpec>* cell, bool enforce, bool calibrated = false);

// The loss_curve block's gate on loss_curve_slope, used when the cell does not name the metric:
// the slope over the sampled points must be < max_slope. Enforced only when loss_curve.enforce
// and enforce_thresholds are both true ("records values but does not fail" otherwise).
Evaluation evaluate_loss_curve(const RunMetrics& run, const LossCurve& lc, bool enforce_thresholds);
// Of a run's notes, the ones about `metric` (why its figure, or its family's, is absent): what an
// N/A says, and nothing else (a note on the step timing is no reason for an absent eval loss).
std::vector<std::string> notes_about(const std::string& metric, const std::vector<std::string>& notes);
// Whether that gate can fail a run (both switches on).
bool loss_curve_gated(const LossCurve& lc, bool enforce_thresholds);

}  // namespace cvs
