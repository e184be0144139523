// The records of results.json as values: their words, their lookups, a session's outcome and
// phases, and a steady state as the record keeps it (results_file.cpp writes and reads them).
#include <cmath>

#include "cvs/base/enum_names.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/statistics/step_stats.hpp"

namespace cvs {

using J = nlohmann::ordered_json;

namespace {

J number_or_null(double v) {
  return std::isfinite(v) ? J(v) : J(nullptr);
}

}  // namespace

namespace {

constexpr EnumWord<TestStatus> kTestWords[] = {
    {TestStatus::Pass, "PASS"}, {TestStatus::Fail, "FAIL"}, {TestStatus::Skipped, "SKIPPED"}};
constexpr EnumWord<SweepStatus> kSweepWords[] = {
    {SweepStatus::Completed, "COMPLETED"}, {SweepStatus::Failed, "FAILED"}, {SweepStatus::NotRun, "NOT RUN"}};

}  // namespace

std::string to_string(TestStatus s) {
  return word_of(kTestWords, s);
}

std::string to_string(SweepStatus s) {
  return word_of(kSweepWords, s);
}

// The readers: the word to_string gives, back to its value.
std::optional<TestStatus> test_status_from_string(std::string_view word) {
  return value_of(kTestWords, word);
}

std::optional<SweepStatus> sweep_status_from_string(std::string_view word) {
  return value_of(kSweepWords, word);
}

const IntervalRecord* SteadyStateRecord::interval(const std::string& metric) const {
  for (const auto& [name, i] : intervals)
    if (name == metric) return &i;
  return nullptr;
}

const double* SweepRecord::metric(const std::string& name) const {
  for (const auto& [k, v] : metrics)
    if (k == name) return &v;
  return nullptr;
}

std::string SweepRecord::effective(const std::string& key) const {
  for (const auto& [k, v] : effective_config)
    if (k == key) return v;
  return "";
}

std::string StageRecord::property(const std::string& key) const {
  for (const auto& [k, v] : properties)
    if (k == key) return v;
  return "";
}

Outcome stage_outcome(TestStatus status, const std::string& outcome_property) {
  const auto said = outcome_from_string(outcome_property);
  switch (status) {
    case TestStatus::Fail:
      return said && (*said == Outcome::Inconclusive || *said == Outcome::Error) ? *said : Outcome::Fail;
    case TestStatus::Skipped:
      return said && *said == Outcome::NA ? Outcome::NA : Outcome::Skipped;
    case TestStatus::Pass:
      break;
  }
  return said ? *said : Outcome::Pass;
}

Outcome Results::status() const {
  // A stage counts against the session as gtest ended it: a failed test is FAIL (an INCONCLUSIVE
  // that fails included) unless it was an ERROR; the rest (an INCONCLUSIVE that passes, a skip) PASS.
  Outcome worst = Outcome::Pass;
  for (const auto& t : stages) {
    const Outcome counted = t.outcome == Outcome::Error    ? Outcome::Error
                            : t.status == TestStatus::Fail ? Outcome::Fail
                                                           : Outcome::Pass;
    worst = worst_of(worst, counted);
  }
  return worst;
}

std::vector<std::pair<Outcome, int>> Results::counts() const {
  std::vector<std::pair<Outcome, int>> c;
  for (Outcome o : {Outcome::Error, Outcome::Fail, Outcome::Inconclusive, Outcome::NA, Outcome::Pass,
                    Outcome::Record, Outcome::Skipped})
    c.emplace_back(o, 0);
  for (const auto& t : stages)
    for (auto& [o, n] : c) n += o == t.outcome;
  return c;
}

const SweepRecord* Results::sweep(const std::string& key) const {
  for (const auto& [k, s] : sweeps)
    if (k == key) return &s;
  return nullptr;
}

SteadyStateRecord steady_state_record(const SteadyState& st) {
  SteadyStateRecord r;
  r.found = st.found;
  r.rule =
      "window: after the first 2 records and the leading records outside the steady band (median +- 4 robust "
      "sd of its second half) or a significant slow phase (MSER's cut at 4 standard errors); step times from "
      "1 / Tokens/s x the tokens per step the log pins down; mean: batch means of >= 2 tau_U steps (tau_U "
      "from the one-sided 95 % bound of the lag-1 autocorrelation), 5-20 batches, t with b - 1 df, their "
      "remaining correlation and half the Cornish-Fisher skew shift; percentiles: order statistics at the "
      "binomial ranks widened by tau_U";
  r.confidence = st.confidence;
  r.first_step = st.first_step;
  r.steps = st.n;
  r.why = st.why;
  r.source = to_string(st.source);
  if (st.tokens_per_step) r.tokens_per_step = std::pair{st.tokens_per_step->lo, st.tokens_per_step->hi};
  if (st.found) {
    r.lag1 = st.lag1;
    r.lag1_upper = st.lag1_upper;
  }
  r.batches = st.batches;
  r.batch_size = st.batch_size;
  if (st.drift) r.drift_pct = 100 * st.drift->relative;
  for (const auto& [name, iv] : st.intervals)
    r.intervals.emplace_back(name, IntervalRecord{iv.estimate, iv.lo, iv.hi});
  for (const auto& [name, why] : st.missing) r.missing.emplace_back(name, why);
  return r;
}

nlohmann::ordered_json to_json(const SteadyStateRecord& st) {
  J steady = {{"found", st.found}, {"rule", st.rule}, {"confidence", st.confidence}};
  if (st.found) {
    steady["first_step"] = st.first_step;
    steady["steps"] = st.steps;
  }
  if (!st.why.empty()) steady["why"] = st.why;
  if (!st.source.empty()) steady["source"] = st.source;
  if (st.tokens_per_step)
    steady["tokens_per_step"] = {number_or_null(st.tokens_per_step->first),
                                 number_or_null(st.tokens_per_step->second)};
  if (st.lag1) steady["lag1"] = number_or_null(*st.lag1);
  if (st.lag1_upper) steady["lag1_upper"] = number_or_null(*st.lag1_upper);
  if (st.batches) {
    steady["batches"] = st.batches;
    steady["batch_size"] = st.batch_size;
  }
  if (st.drift_pct) steady["drift_pct"] = number_or_null(*st.drift_pct);
  J ivs = J::object();
  for (const auto& [name, iv] : st.intervals)
    ivs[name] = {{"estimate", number_or_null(iv.estimate)},
                 {"lo", number_or_null(iv.lo)},
                 {"hi", number_or_null(iv.hi)}};
  steady["intervals"] = ivs;
  if (!st.missing.empty()) {
    J miss = J::object();
    for (const auto& [name, why] : st.missing) miss[name] = why;
    steady["missing"] = miss;
  }
  return steady;
}

PhaseTotals session_phases(const Results& r) {
  PhaseTotals t;
  const auto add = [&](const RunRecord& run) {
    if (!run.nodes.empty() && run.nodes.front().phases) t.add(*run.nodes.front().phases);
  };
  if (r.smoke) add(*r.smoke);
  for (const auto& [key, sweep] : r.sweeps)
    if (sweep.status != SweepStatus::NotRun) add(sweep.run);
  if (r.checkpoint) {
    add(r.checkpoint->phase1);
    if (r.checkpoint->phase2) add(*r.checkpoint->phase2);
  }
  return t;
}

}  // namespace cvs
