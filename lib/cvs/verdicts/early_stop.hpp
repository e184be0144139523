// Stop early once decisive, extend when not (statistics.on_inconclusive: extend).
//
// A performance sweep is launched with a step cap instead of its configured steps. At planned
// looks (head step counts doubling from the first look up to the cap) every speed gate of its
// threshold cell is decided on its steady-state interval; once all are decisive (PASS or FAIL)
// the run is stopped through the launcher's stop path, and while any is INCONCLUSIVE it goes on,
// up to the cap. Peeking at the data K times would inflate the error rate of a fixed-level
// interval, so the error is spent over the planned looks (Bonferroni): each look uses the
// confidence 1 - (1 - confidence) / K, and so does the final verdict.
//
// Gates on anything else (loss values, trend, the loss_curve block's slope) need the configured
// step count: a sweep with such gates is never stopped before it, and its loss metrics are taken
// from its first `steps` steps (the learning-rate schedule is pinned to them). Only the gates the
// session evaluates count: a session that evaluates speed gates alone (certify's nodes tier) looks
// from the first planned look on, and a run it stops before its configured steps has no loss
// metrics (they would be another step count's).
//
// A precision to reach (statistics.stop_half_width_pct; cvs certify's nodes tier): a look stops the
// run only once the tokens_per_sec_per_gpu interval's half-width is at most that share of its
// estimate as well, the figure fleet scoring compares nodes on; a run with no speed gate is
// stopped by that alone. Stopping on an interval's width, not on where it lies, spends no error
// beyond the looks' (the width does not depend on which side of a threshold the estimate is).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cvs/config/thresholds.hpp"
#include "cvs/logs/maxtext_log.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/verdicts/evaluation.hpp"

namespace cvs {

struct EarlyStopPlan {
  long long configured_steps = 0;
  long long cap = 0;
  long long first_stop = 0;      // no stop before this many steps
  std::vector<long long> looks;  // head step counts at which to decide, ascending, last = cap
  double confidence = 0.95;      // overall
  double per_look_confidence = 0.95;
  double max_half_width = 0;  // tokens_per_sec_per_gpu: half-width / estimate a stop needs; 0: none

  // looks at max(2 x min_steady, 10) steps, doubling, from first_stop on, plus the cap; first_stop
  // is the configured steps when the sweep gates anything but speed.
  static EarlyStopPlan make(long long steps, long long cap, long long min_steady, bool gates_beyond_speed,
                            double confidence);
  // Whether a look has anything to decide: speed gates, or a precision to reach.
  bool looks_at_all(std::size_t speed_gates) const { return speed_gates > 0 || max_half_width > 0; }
};

// The stateful decision the launcher calls on the head's step records while a run trains.
class EarlyStopper {
 public:
  // ctx: the run's metrics context (nodes, devices, scaling baseline: every speed gate, scaling
  // efficiency included, is decided at a look); its confidence is replaced by the plan's per-look one.
  EarlyStopper(EarlyStopPlan plan, std::vector<ThresholdSpec> speed_gates, MetricsContext ctx);
  // True once every speed gate is decisive, and the precision reached, at a planned look (at most
  // once per look).
  bool operator()(const std::vector<StepRecord>& head);
  const EarlyStopPlan& plan() const { return plan_; }
  const std::string& reason() const { return reason_; }
  int looks_taken() const { return looks_taken_; }
  // How many head records the deciding look saw (0 before a decision): the final verdict is
  // taken on these, not on the steps trained while the stop reached the nodes.
  std::size_t decided_at() const { return decided_at_; }

 private:
  EarlyStopPlan plan_;
  std::vector<ThresholdSpec> gates_;
  MetricsContext ctx_;
  std::size_t next_look_ = 0;
  int looks_taken_ = 0;
  std::size_t decided_at_ = 0;
  std::string reason_;
};

// Whether the session evaluates a metric's gate (its test_metric case runs); every metric when
// unset.
using MetricEvaluated = std::function<bool(const std::string& metric)>;
// The speed gates of a cell (non-info specs on speed metrics) the session evaluates, and whether
// it evaluates a gate on anything else (a run that gates no loss can stop before its configured
// steps: certify's nodes tier, whose question is speed).
std::vector<ThresholdSpec> speed_gates(const std::vector<ThresholdSpec>* cell,
                                       const MetricEvaluated& evaluated = {});
bool gates_beyond_speed(const std::vector<ThresholdSpec>* cell, const MetricEvaluated& evaluated = {});

}  // namespace cvs
