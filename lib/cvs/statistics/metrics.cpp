#include "cvs/statistics/metrics.hpp"

#include "cvs/base/format.hpp"
#include "cvs/catalog/metric_catalog.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cvs {

std::optional<double> MetricValues::get(std::string_view name) const {
  const auto m = metric_from_name(name);
  return m ? get(*m) : std::nullopt;
}

std::vector<std::pair<Metric, double>> MetricValues::entries() const {
  std::vector<std::pair<Metric, double>> out;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i]) out.emplace_back(static_cast<Metric>(i), *slots_[i]);
  return out;
}

namespace {

std::string order_problem(const std::string& source, long long prev, long long cur) {
  if (cur == prev)
    return source + ": step " + std::to_string(cur) +
           " appears twice: two runs wrote into one log (duplicates are rejected, not averaged)";
  return source + ": step numbers go down (" + std::to_string(prev) + " then " + std::to_string(cur) +
         "): the log holds a restarted or blended run";
}

// Least squares over points given by each(f), f(step, loss) in order: the means, then the sums
// around them (two passes, as the vector version has always done).
template <class Each>
std::optional<double> slope_of(Each each, std::size_t n) {
  if (n < 2) return std::nullopt;
  double mx = 0, my = 0;
  each([&](long long step, double loss) {
    mx += static_cast<double>(step);
    my += loss;
  });
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  each([&](long long step, double loss) {
    const double dx = static_cast<double>(step) - mx;
    sxy += dx * (loss - my);
    sxx += dx * dx;
  });
  if (sxx == 0) return std::nullopt;
  return sxy / sxx;
}

}  // namespace

void check_step_series(const std::vector<StepRecord>& steps, const std::string& source) {
  for (std::size_t i = 1; i < steps.size(); ++i)
    if (steps[i].step <= steps[i - 1].step)
      throw MetricsError(order_problem(source, steps[i - 1].step, steps[i].step));
}

std::optional<double> least_squares_slope(const std::vector<LossPoint>& pts) {
  return slope_of(
      [&](auto f) {
        for (const auto& p : pts) f(p.step, p.loss);
      },
      pts.size());
}

StepSeries::StepSeries(const MetricsContext& ctx, bool keep_curves) : ctx_(ctx), keep_curves_(keep_curves) {}

void StepSeries::check_order(const std::string& source) const {
  if (order_problem_)
    throw MetricsError(order_problem(source, order_problem_->first, order_problem_->second));
}

void StepSeries::add_eval(const EvalRecord& e) {
  mark_steps(ExcludedBecause::Eval, e.after_step);
  ++evals_;
  last_eval_loss_ = e.loss;
  const auto& cv = ctx_.convergence;
  if (!(cv.target_value > 0) || eval_hit_ || !(e.loss <= cv.target_value)) return;
  eval_hit_ = e.after_step;
  if (records_ == 0 || last_.step <= e.after_step) {  // the steps up to it are all in, or still to come
    eval_seconds_ = cum_seconds_;
    eval_open_ = true;
    return;
  }
  // Its line came after later steps' lines: the time from the steps before it, summed in order.
  if (recent_.pushed() > recent_.size() && recent_[0].first > e.after_step) {
    eval_lost_ = true;
    return;
  }
  double t = before_recent_;
  for (std::size_t k = 0; k < recent_.size() && recent_[k].first <= e.after_step; ++k) t += recent_[k].second;
  eval_seconds_ = t;
}

void StepSeries::add(const StepRecord& r) {
  if (records_ > 0 && r.step <= last_.step && !order_problem_) order_problem_ = {last_.step, r.step};
  if (records_ == 0) first_ = r;
  if (r.loss_logged) {
    if (!first_loss_) first_loss_ = r.loss;
    last_loss_ = r.loss;
    if (!std::isfinite(r.loss) && !nonfinite_) {
      nonfinite_ = true;
      first_nonfinite_ = r.step;
    }
    if (keep_curves_) loss_curve_.push_back({r.step, r.loss});
  }
  add_speed(r);
  add_loss_curve(r);
  add_convergence(r);
  last_ = r;
  ++records_;
}

// Every record waits in the queue for kLookahead later ones; rampup and profiler boundary steps
// carry no throughput, the warm-up (the run's first kWarmupSteps step numbers) is no speed record.
void StepSeries::add_speed(const StepRecord& r) {
  if (records_ == 0)
    warmup_end_step_ = ctx_.run_first_step.value_or(r.step) + static_cast<long long>(kWarmupSteps);
  Queued q{r, is_timed(r), r.step < warmup_end_step_, std::nullopt};
  if (profiler_open_ || mark_next_profiler_) {
    q.mark = std::pair{ExcludedBecause::Profiler, -1LL};
    mark_next_profiler_ = false;
  }
  if (auto it = marks_ahead_.find(r.step); it != marks_ahead_.end()) {
    if (!q.mark) q.mark = it->second;
    marks_ahead_.erase(marks_ahead_.begin(), std::next(it));
  }
  queue_.push_back(std::move(q));
  while (queue_.size() > kLookahead) judge_front();
}

// An eval after step N or a checkpoint save of step N: step N's record or step N + 1's may hold
// its time (which one depends on the version's write order), whichever has arrived or will.
void StepSeries::mark_steps(ExcludedBecause why, long long step) {
  for (auto& q : queue_)
    if ((q.r.step == step || q.r.step == step + 1) && !q.mark) q.mark = std::pair{why, step};
  for (long long s : {step, step + 1})
    if (records_ == 0 || s > last_.step) marks_ahead_.emplace(s, std::pair{why, step});
}

void StepSeries::add_marker(const StepMarker& m) {
  switch (m.kind) {
    case MarkerKind::Eval:
      return mark_steps(ExcludedBecause::Eval, m.step);
    case MarkerKind::CheckpointSave:
      return mark_steps(ExcludedBecause::CheckpointSave, m.step);
    case MarkerKind::ProfilerStart:
      profiler_open_ = true;
      if (!queue_.empty() && !queue_.back().mark)
        queue_.back().mark = std::pair{ExcludedBecause::Profiler, -1LL};
      return;
    case MarkerKind::ProfilerEnd:
      profiler_open_ = false;
      mark_next_profiler_ = true;
      return;
  }
}

// The median seconds of the kLookahead records after the one being judged (taken off the queue),
// topped up with the last kept records when fewer follow; nullopt with fewer than 2.
// Paid per record: the at most kLookahead values sit on the stack, sorted in place (no allocation).
std::optional<double> StepSeries::reference_seconds() const {
  std::array<double, kLookahead> ref{};
  std::size_t n = 0;
  for (std::size_t k = 0; k < queue_.size() && n < kLookahead; ++k)
    if (queue_[k].timed && !queue_[k].warmup) ref[n++] = *queue_[k].r.seconds;
  for (std::size_t k = recent_kept_.size(); k > 0 && n < kLookahead; --k) ref[n++] = recent_kept_[k - 1];
  // A short log's first record: the other warm-up candidates after it complete its reference.
  for (std::size_t k = 0; k < queue_.size() && n < 2; ++k)
    if (queue_[k].timed && queue_[k].warmup) ref[n++] = *queue_[k].r.seconds;
  if (n < 2) return std::nullopt;
  std::sort(ref.begin(), ref.begin() + static_cast<long>(n));
  const auto rank = percentile_rank(n, 50);
  return rank.at(ref[rank.lo], ref[rank.hi]);
}

// The rule a timed record falls under, if any: a start-up record outside [0.5x, 2x] the reference
// (the first kAsyncCandidates speed records, in a row from the first), a record under half of it
// at the start-up or under kDispatchRatio of it later (it timed MaxText's asynchronous dispatch,
// not the work), the record after such a one over 1.5x
// (the work caught up), a record over 1.5x that the log says holds an eval, a checkpoint save or
// a profiler window. A slow record the log says nothing about is a step's time: it stays.
std::optional<ExcludedBecause> StepSeries::excluded_because(const Queued& q, double ref) {
  const double s = *q.r.seconds;
  const bool after_dispatch = last_dispatch_;
  last_dispatch_ = false;
  if (!judged_any_) return std::nullopt;  // the run's first record compiles: the warm-up holds it
  // Past the start-up, a dispatch record is far below its neighbours (0.002 s among 11.7 s, 0.3 s
  // among 50 s): under kDispatchRatio of the median, so that a shared machine's noise is no dispatch.
  const bool startup = !q.warmup && startup_left_ > 0;
  const double dispatch_below = (startup ? 0.5 : kDispatchRatio) * ref;
  if (s < dispatch_below) {
    last_dispatch_ = true;
    last_dispatch_step_ = q.r.step;
  }
  if (q.warmup) return std::nullopt;
  if (startup) --startup_left_;
  if (s < dispatch_below) return ExcludedBecause::AsyncDispatch;
  if (after_dispatch && s > 1.5 * ref) return ExcludedBecause::CatchUp;
  if (startup) {
    if (s > 2.0 * ref) return ExcludedBecause::StartUp;
    startup_left_ = 0;
  }
  if (q.mark && s > 1.5 * ref) return q.mark->first;
  if (s > ctx_.stall_factor * ref) return ExcludedBecause::Stall;
  return std::nullopt;
}

// Paid per record left out: the counts; the words only for the first kNamedExclusions.
void StepSeries::exclude(const Queued& q, ExcludedBecause why, double ref) {
  const double s = *q.r.seconds;
  if (why == ExcludedBecause::Stall) {
    ++stall_count_;
    stall_lost_ += s - ref;
    if (stalls_.size() < kNamedStalls) stalls_.push_back({q.r.step, s, ref, q.r.line_no});
  }
  const bool async = why == ExcludedBecause::StartUp || why == ExcludedBecause::AsyncDispatch ||
                     why == ExcludedBecause::CatchUp;
  async_total_ += async;
  ++excluded_by_rule_[static_cast<std::size_t>(why)];
  if (excluded_.size() >= kNamedExclusions) return;
  if (async) async_dropped_.push_back(q.r.step);
  excluded_.push_back({q.r.step, s, why});
  async_notes_.push_back(exclusion_note(q, why, ref));
}

// A warm-up candidate (the run's first kWarmupSteps step numbers) of a run that does not start at
// step 0 (MaxText's compile step) that is evidently a steady step, within kSteadyWarmup of the
// records after it, is one: a log cut from mid-run, or lines numbered from 1, keep their first
// records; a compile-long or dispatch-short one is dropped.
bool StepSeries::steady_warmup(const StepRecord& r) const {
  if (warmup_end_step_ == static_cast<long long>(kWarmupSteps)) return false;
  const auto ref = reference_seconds();
  return ref && *ref > 0 && *r.seconds <= kSteadyWarmup * *ref && *r.seconds * kSteadyWarmup >= *ref;
}

void StepSeries::judge_front() {
  Queued q = std::move(queue_.front());
  queue_.pop_front();
  const StepRecord& r = q.r;
  const bool timed = q.timed;
  if (q.warmup && timed && steady_warmup(r)) {
    q.warmup = false;
    ++warmup_kept_;
  }
  const bool speed = !q.warmup && !r.rampup && !r.profiler_boundary && r.seconds.has_value();
  if (timed && !q.warmup) judged_seconds_ += *r.seconds;
  if (timed) {
    if (const auto ref = reference_seconds(); ref && *ref > 0) {
      if (const auto why = excluded_because(q, *ref)) {
        judged_any_ = true;
        return exclude(q, *why, *ref);
      }
    }
    judged_any_ = true;
  }
  const std::size_t i = timed_.size();
  if (timed) {
    if (!speed) exclude_timed(i);
    timed_.add(r);
    if (speed) recent_kept_.push(*r.seconds);
  }
  if (speed)
    commit_speed({r.step, *r.seconds, r.tflops_per_device, r.tokens_per_device, timed ? i : kNoIndex});
}

// The timed record at index i is not a speed record (the percentiles leave it out): the ranges
// stay sorted and merged.
void StepSeries::exclude_timed(std::size_t i) {
  auto it = std::upper_bound(not_speed_.begin(), not_speed_.end(), std::pair{i, i},
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  if (it != not_speed_.begin() && std::prev(it)->second >= i) {
    auto prev = std::prev(it);
    prev->second = std::max(prev->second, i + 1);
    if (it != not_speed_.end() && it->first <= prev->second) {
      prev->second = std::max(prev->second, it->second);
      not_speed_.erase(it);
    }
    return;
  }
  if (it != not_speed_.end() && it->first == i + 1) {
    it->first = i;
    return;
  }
  not_speed_.insert(it, {i, i + 1});
}

void StepSeries::commit_speed(const SpeedRecord& r) {
  const double s = r.seconds;
  if (speed_n_ == 0) speed_first_step_ = r.step;
  speed_last_step_ = r.step;
  ++speed_n_;
  speed_secs_ += s;
  last_secs_.push(s);
  if (keep_curves_) speed_times_.push_back(s);
  if (!std::isfinite(s)) ++speed_nonfinite_;
  any_tflops_ = any_tflops_ || r.tflops.has_value();
  any_tokens_ = any_tokens_ || r.tokens.has_value();
  for (auto [rate, acc] : {std::pair{r.tflops, &tflops_}, std::pair{r.tokens, &tokens_}}) {
    if (!rate) continue;
    acc->work += *rate * s;
    acc->time += s;
    ++acc->n;
    acc->last.push(*rate);
  }
}

void StepSeries::add_loss_curve(const StepRecord& r) {
  // Loss curve: the first and the last step, every sample_every-th step and the milestone steps
  // that the run reached (as CVS samples it: a short run still has a slope, its end counts). The
  // last is known at finish().
  const auto& lc = ctx_.loss_curve;
  const bool sampled =
      records_ == 0 || (lc.sample_every > 0 && r.step % lc.sample_every == 0) ||
      std::find(lc.milestone_steps.begin(), lc.milestone_steps.end(), r.step) != lc.milestone_steps.end();
  last_sampled_ = sampled && r.loss_logged && std::isfinite(r.loss);
  if (!last_sampled_) return;
  sampled_loss_.push_back(r.loss);
  if (!sampled_steps_.empty()) {
    auto& run = sampled_steps_.back();
    if (run.n == 1) run.stride = r.step - run.first;
    if (r.step == run.first + run.stride * static_cast<long long>(run.n)) {
      ++run.n;
      return;
    }
  }
  sampled_steps_.push_back({sampled_loss_.size() - 1, r.step, 0, 1});
}

void StepSeries::add_convergence(const StepRecord& r) {
  const double s = r.seconds.value_or(0.0);
  cum_seconds_ += s;
  const auto& cv = ctx_.convergence;
  if (cv.target_value > 0 && !train_hit_ && r.loss_logged && r.loss <= cv.target_value)
    train_hit_ = {r.step, cum_seconds_};
  if (eval_open_) {
    if (r.step > *eval_hit_)
      eval_open_ = false;
    else
      eval_seconds_ += s;
  }
  if (const auto* old = recent_.next_evicted()) before_recent_ += old->second;
  recent_.push({r.step, s});
}

// The records left out of the speed figures, into the run's figures and notes: the first
// kNamedExclusions one by one, the rest counted by rule.
void StepSeries::exclusion_notes(RunMetrics& m) {
  m.warmup_dropped = std::min(kWarmupSteps, records_) - std::min(warmup_kept_, kWarmupSteps) + async_total_;
  m.async_dropped_steps = async_dropped_;
  m.excluded = excluded_;
  for (auto& n : async_notes_) m.notes.push_back(std::move(n));
  std::size_t total = 0;
  std::string by_rule;
  for (std::size_t k = 0; k < excluded_by_rule_.size(); ++k)
    if (excluded_by_rule_[k] > 0) {
      total += excluded_by_rule_[k];
      by_rule += (by_rule.empty() ? "" : ", ") + std::to_string(excluded_by_rule_[k]) + " " +
                 to_string(static_cast<ExcludedBecause>(k));
    }
  if (total > excluded_.size())
    m.notes.push_back(std::to_string(total) + " records left out of the speed figures in all (" + by_rule +
                      "); the first " + std::to_string(excluded_.size()) + " are named");
}

void StepSeries::speed_metrics(RunMetrics& m) {
  auto set = [&](Metric k, double v) { m.values.set(k, v); };
  while (!queue_.empty()) judge_front();
  exclusion_notes(m);
  m.step_times_s = std::move(speed_times_);
  if (speed_n_ < kMinSpeedRecords) {
    m.notes.push_back(
        std::to_string(speed_n_) + " step record(s) are steps' times after the " +
        std::to_string(kWarmupSteps) +
        " warm-up steps and the records left out: throughput and step-time figures need at least " +
        std::to_string(kMinSpeedRecords));
    return;
  }
  if (!any_tflops_)
    m.notes.push_back(
        "no step line has TFLOP/s/device (or the 2023 TFLOP/s): the TFLOP/s figures are absent");
  if (!any_tokens_)
    m.notes.push_back(
        "no step line has Tokens/s/device (MaxText before mid-2024 did not print it): the tokens/s figures "
        "are absent");
  m.point_steps = std::pair{speed_first_step_, speed_last_step_};
  const double mean = speed_secs_ / static_cast<double>(speed_n_);
  set(Metric::StepTimeSeconds, mean);
  set(Metric::StepTimeMeanMs, mean * 1000.0);
  // The percentiles of the speed records' seconds: the timed ones less the warm-up and rampup, read
  // in place from the column (a non-finite step time makes them NaN, as it makes the mean).
  double p50 = std::nan(""), p95 = std::nan("");
  if (speed_nonfinite_ == 0) {
    std::vector<std::pair<std::size_t, std::size_t>> keep;
    std::size_t at = 0;
    for (const auto& [b, e] : not_speed_) {
      if (b > at) keep.emplace_back(at, b);
      at = e;
    }
    if (at < timed_.size()) keep.emplace_back(at, timed_.size());
    const auto r50 = percentile_rank(speed_n_, 50), r95 = percentile_rank(speed_n_, 95);
    const auto v = timed_.seconds().order_statistics(keep, {r50.lo, r50.hi, r95.lo, r95.hi});
    p50 = r50.at(v[0], v[1]);
    p95 = r95.at(v[2], v[3]);
  }
  set(Metric::StepTimeP50Ms, p50 * 1000.0);
  set(Metric::StepTimeP95Ms, p95 * 1000.0);
  // Work over time: sum(rate_i x seconds_i) / sum(seconds_i), the total work of the steps over
  // their total time. A mean of rates would let one short step inflate the figure. MaxText prints
  // rates with 3 decimals: a step printed as 0.000 adds (almost) no work but still its time, so one
  // rounded step moves the figure by its share of the time instead of making it 0.
  if (tflops_.n > 0 && tflops_.time > 0) set(Metric::TflopsPerSecPerGpu, tflops_.work / tflops_.time);
  if (tokens_.n > 0 && tokens_.time > 0) {
    const double per_gpu = tokens_.work / tokens_.time;
    set(Metric::TokensPerSecPerGpu, per_gpu);
    const double total = per_gpu * ctx_.num_nodes * ctx_.gpus_per_node;
    set(Metric::TokensPerSecTotal, total);
    const auto& b = ctx_.scaling_baseline;
    if (b.tokens_per_sec_total > 0 && b.num_nodes > 0 && ctx_.distributed) {
      const double ideal = b.tokens_per_sec_total * static_cast<double>(ctx_.num_nodes) / b.num_nodes;
      set(Metric::ScalingEfficiencyPct, 100.0 * total / ideal);
    }
  }
  const std::size_t n10 = std::min<std::size_t>(10, speed_n_);
  auto tail_mean = [n10](const Tail<double, 10>& t) {
    double sum = 0.0;
    for (std::size_t k = t.size() - n10; k < t.size(); ++k) sum += t[k];
    return sum / static_cast<double>(n10);
  };
  set(Metric::Last10StepsStepTimeMsAvg, tail_mean(last_secs_) * 1000.0);
  if (tflops_.n >= n10) set(Metric::Last10StepsModelTflopsPerGpuAvg, tail_mean(tflops_.last));
  if (tokens_.n >= n10) set(Metric::Last10StepsTokensPerSecondPerGpuAvg, tail_mean(tokens_.last));
}

void StepSeries::loss_curve_metrics(RunMetrics& m) {
  if (!last_sampled_ && last_.loss_logged &&
      std::isfinite(last_.loss)) {  // the last step is always on the curve
    last_sampled_ = true;
    sampled_loss_.push_back(last_.loss);
    sampled_steps_.push_back({sampled_loss_.size() - 1, last_.step, 0, 1});
  }
  auto each = [&](auto f) {
    for (const auto& run : sampled_steps_)
      for (std::size_t k = 0; k < run.n; ++k)
        f(run.first + run.stride * static_cast<long long>(k), sampled_loss_[run.at + k]);
  };
  if (keep_curves_) each([&](long long step, double loss) { m.sampled_curve.push_back({step, loss}); });
  if (auto slope = slope_of(each, sampled_loss_.size()))
    m.values.set(Metric::LossCurveSlope, *slope);
  else
    m.notes.push_back("loss_curve_slope needs >= 2 sampled points (every " +
                      std::to_string(ctx_.loss_curve.sample_every) + " steps); the run has " +
                      std::to_string(sampled_loss_.size()));
}

void StepSeries::convergence_metrics(RunMetrics& m) {
  // Convergence: the first step whose target loss is <= target_value, and the seconds of the
  // steps up to it.
  const auto& cv = ctx_.convergence;
  if (!(cv.target_value > 0)) return;
  const bool use_eval = cv.target_metric == "eval_loss" || (cv.target_metric == "auto" && evals_ > 0);
  const std::optional<long long> hit =
      use_eval ? eval_hit_ : (train_hit_ ? std::optional(train_hit_->first) : std::nullopt);
  if (!hit) {
    m.notes.push_back(std::string("convergence target ") + std::to_string(cv.target_value) +
                      " not reached by " + (use_eval ? "eval" : "training") + " loss");
    return;
  }
  m.values.set(Metric::StepsToTarget, static_cast<double>(*hit));
  if (use_eval && eval_lost_)
    m.notes.push_back("time_to_target_seconds: the eval line of step " + std::to_string(*hit) +
                      " came more than 64 step lines after that step's");
  else
    m.values.set(Metric::TimeToTargetSeconds, use_eval ? eval_seconds_ : train_hit_->second);
}

RunMetrics StepSeries::finish() {
  RunMetrics m;
  if (records_ == 0) {
    m.notes.push_back("no 'completed step' lines in the log");
    return m;
  }
  if (first_loss_) {  // step lines that name no loss leave the loss figures unset
    m.values.set(Metric::InitialLoss, *first_loss_);
    m.values.set(Metric::FinalLoss, *last_loss_);
    // NaN compares false: a run with a non-finite loss never reports a decrease.
    m.values.set(Metric::LossDecreased,
                 (std::isfinite(*last_loss_) && *last_loss_ < *first_loss_ && !nonfinite_) ? 1.0 : 0.0);
  } else {
    m.notes.push_back("no step line names a loss: the loss figures are absent");
  }
  m.nonfinite_loss = nonfinite_;
  if (nonfinite_) m.first_nonfinite_step = first_nonfinite_;
  m.loss_curve = std::move(loss_curve_);
  speed_metrics(m);
  stall_metrics(m);
  loss_curve_metrics(m);
  if (evals_ > 0) m.values.set(Metric::EvalLoss, last_eval_loss_);
  convergence_metrics(m);
  m.steady = steady_state(timed_, ctx_.num_nodes * ctx_.gpus_per_node, ctx_.confidence);
  // Scaling efficiency is the total throughput over a fixed ideal: its interval is that one's.
  if (const auto eff = m.get(Metric::ScalingEfficiencyPct), total = m.get(Metric::TokensPerSecTotal);
      eff && total)
    if (auto it = m.steady.intervals.find(std::string(to_string(Metric::TokensPerSecTotal)));
        it != m.steady.intervals.end() && *total > 0) {
      const double f = *eff / *total;
      m.steady.intervals[std::string(to_string(Metric::ScalingEfficiencyPct))] = {
          it->second.estimate * f, it->second.lo * f, it->second.hi * f};
    }
  if (!m.steady.found) m.notes.push_back(m.steady.why);
  if (!m.steady.note.empty()) m.notes.push_back(m.steady.note);
  return m;
}

// The stalls as figures of their own and in words: each named with its step, its seconds and what
// it cost over the steps around it; none is a figure too (0), once the run has steps to judge.
void StepSeries::stall_metrics(RunMetrics& m) {
  if (judged_seconds_ <= 0) return;
  m.values.set(Metric::StalledSteps, static_cast<double>(stall_count_));
  m.values.set(Metric::StallSeconds, stall_lost_);
  m.values.set(Metric::TimeLostPct, 100 * stall_lost_ / judged_seconds_);
  m.stalls = stalls_;
  if (stall_count_ == 0) return;
  std::string named;
  for (const auto& s : stalls_)
    named += (named.empty() ? "" : ", ") + std::string("step ") + std::to_string(s.step) + " " +
             short_number(s.seconds) + " s";
  m.stall_summary = std::to_string(stall_count_) + " stall(s) cost " +
                    format_figure(Metric::StallSeconds, stall_lost_) + " s, " +
                    format_figure(Metric::TimeLostPct, 100 * stall_lost_ / judged_seconds_) +
                    " % of the steps' time (" + named + (stall_count_ > stalls_.size() ? ", ..." : "") + ")";
  m.notes.push_back(m.stall_summary +
                    ": left out of the speed figures, which say what the hardware does when it runs");
}

}  // namespace cvs
