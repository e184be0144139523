// results.json, typed: a file the writer before the typed model wrote (3c4c89c, the CPU default)
// reads back to the same document, byte for byte, from the typed writer; an older file
// (no steady state, no metrics_source, fewer counts) still reads; a document that is not a
// results.json is bad input at its pointer.
#include <gtest/gtest.h>

#include <cmath>

#include "cvs/config/config_error.hpp"
#include "cvs/results/results_file.hpp"
#include "test_helpers.hpp"

using J = nlohmann::ordered_json;

namespace {

J current() {
  return cvs::test::read_json(cvs::test::data("results/cpu_single_results_current.json"));
}
J older() {
  return cvs::test::read_json(cvs::test::data("results/cpu_single_results.json"));
}

}  // namespace

TEST(ResultsFile, WhatTheSuiteWroteReadsBackToTheSameDocument) {
  const J j = current();
  const auto r = cvs::results_from_json(j, "current.json");
  EXPECT_EQ(cvs::to_json(r).dump(2), j.dump(2)) << "every key, its order, nulls and numbers";
  ASSERT_FALSE(r.sweeps.empty());
  const auto& s = r.sweeps.front().second;
  EXPECT_EQ(s.status, cvs::SweepStatus::Completed);
  ASSERT_TRUE(s.steady_state.has_value()) << "a current file carries the steady state";
  EXPECT_FALSE(s.steady_state->intervals.empty());
  EXPECT_TRUE(s.metrics_source.has_value());
  EXPECT_EQ(r.status(), cvs::Outcome::Pass);
  ASSERT_FALSE(s.run.nodes.empty());
  EXPECT_EQ(s.run.nodes[0].state, cvs::NodeState::Exited);
}

TEST(ResultsFile, AnOlderFileStillReads) {
  const J j = older();
  const auto r = cvs::results_from_json(j, "older.json");
  EXPECT_EQ(r.suite, "jaxmaxtext_single");
  EXPECT_EQ(cvs::to_string(r.status()), j["status"].get<std::string>()) << "derived from the stages";
  ASSERT_EQ(r.sweeps.size(), 2u);
  const auto* s = r.sweep("BS=2,PRECISION=BF16,SL=128");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->steady_state.has_value());
  EXPECT_FALSE(s->metrics_source.has_value());
  ASSERT_NE(s->metric("final_loss"), nullptr);
  EXPECT_DOUBLE_EQ(*s->metric("final_loss"),
                   j["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["metrics"]["final_loss"].get<double>());
  ASSERT_TRUE(r.checkpoint.has_value());
  EXPECT_TRUE(r.checkpoint->phase2.has_value());
  for (const auto& [o, n] : r.counts())
    EXPECT_EQ(n, j["counts"].value(cvs::to_string(o), 0)) << cvs::to_string(o);
  // What it held reads back the same, key for key, where the writer has not grown since; the
  // thresholds' source it did not say yet reads as the config's (what its report showed).
  J again = cvs::to_json(r);
  EXPECT_EQ(again["config"]["thresholds_source"], "config");
  again["config"].erase("thresholds_source");
  for (const char* k : {"config", "cluster", "provenance", "smoke", "checkpoint_resume", "stages"})
    EXPECT_EQ(again[k], j[k]) << k;
}

TEST(ResultsFile, EveryOptionalPartRoundTrips) {
  J j = current();
  auto& s = j["sweeps"].begin().value();
  s["early_stop"] = {{"configured_steps", 200}, {"cap", 400},        {"steps_run", 120},
                     {"stopped_early", true},   {"looks", 3},        {"per_look_confidence", 0.983},
                     {"reason", "decided"},     {"steps_saved", 80}, {"seconds_saved", 12.5}};
  s["run"]["first_error"] = {
      {"node", "n1"}, {"pattern", "oom"}, {"line_no", 7}, {"line", "RESOURCE_EXHAUSTED"}};
  s["metrics"]["final_loss"] = nullptr;
  s["peak_memory_gb"] = 61.5;
  J r0 = cvs::to_json(cvs::results_from_json(j));
  // The writer's key order: early_stop after run, first_error after timed_out, peak last.
  const auto again = cvs::to_json(cvs::results_from_json(r0));
  EXPECT_EQ(again.dump(), r0.dump());
  const auto typed = cvs::results_from_json(r0);
  const auto& ts = typed.sweeps.front().second;
  ASSERT_TRUE(ts.early_stop.has_value());
  EXPECT_EQ(ts.early_stop->steps_saved, 80);
  ASSERT_TRUE(ts.run.first_error.has_value());
  EXPECT_EQ(ts.run.first_error->line_no, 7);
  EXPECT_TRUE(std::isnan(*ts.metric("final_loss"))) << "null reads as NaN and is written as null";
  EXPECT_TRUE(r0["sweeps"].begin().value()["metrics"]["final_loss"].is_null());
  J with_baseline = r0;
  with_baseline["baseline_comparison"] = {{"baseline", "/old/results.json"}, {"error", "cannot be read"}};
  EXPECT_EQ(cvs::to_json(cvs::results_from_json(with_baseline)).dump(), with_baseline.dump());
}

TEST(ResultsFile, StatusIsFailOverErrorOverPass) {
  cvs::Results r;
  r.stages.push_back({"a", "test_setup", cvs::TestStatus::Pass, cvs::Outcome::Pass, "", 0, {}});
  EXPECT_EQ(r.status(), cvs::Outcome::Pass);
  r.stages.push_back({"b", "test_smoke", cvs::TestStatus::Fail, cvs::Outcome::Error, "", 0, {}});
  EXPECT_EQ(r.status(), cvs::Outcome::Error) << "an infrastructure error, no gate missed";
  r.stages.push_back({"c", "test_metric", cvs::TestStatus::Fail, cvs::Outcome::Inconclusive, "", 0, {}});
  EXPECT_EQ(r.status(), cvs::Outcome::Fail) << "an INCONCLUSIVE that fails the test is a missed gate";
  EXPECT_EQ(cvs::stage_outcome(cvs::TestStatus::Fail, "RECORD"), cvs::Outcome::Fail);
  EXPECT_EQ(cvs::stage_outcome(cvs::TestStatus::Skipped, "N/A"), cvs::Outcome::NA);
  EXPECT_EQ(cvs::stage_outcome(cvs::TestStatus::Skipped, ""), cvs::Outcome::Skipped);
  EXPECT_EQ(cvs::stage_outcome(cvs::TestStatus::Pass, "RECORD"), cvs::Outcome::Record);
  EXPECT_EQ(cvs::stage_outcome(cvs::TestStatus::Pass, ""), cvs::Outcome::Pass);
}

TEST(ResultsFile, ADocumentThatIsNotAResultsFileIsBadInputAtItsPointer) {
  auto issue = [](const J& j) -> cvs::ConfigIssue {
    try {
      cvs::results_from_json(j, "r.json");
    } catch (const cvs::ConfigError& e) {
      return e.issues().at(0);
    }
    return {};
  };
  EXPECT_EQ(issue(J{{"a", 1}}).pointer, "");
  EXPECT_EQ(issue(J{{"schema_version", 3}, {"sweeps", J::object()}}).pointer, "/schema_version");
  J j = current();
  j["sweeps"].begin().value()["run"]["nodes"][0]["state"] = "melted";
  const auto bad_state = issue(j);
  EXPECT_EQ(bad_state.file, "r.json");
  EXPECT_EQ(bad_state.pointer.substr(0, 8), "/sweeps/");
  EXPECT_NE(bad_state.pointer.find("/run/nodes/0/state"), std::string::npos) << bad_state.pointer;
  j = current();
  j["stages"][1]["outcome"] = "MAYBE";
  EXPECT_EQ(issue(j).pointer, "/stages/1/outcome");
  j = current();
  j["stages"][0]["status"] = "OK";
  EXPECT_EQ(issue(j).pointer, "/stages/0/status");
  EXPECT_NE(issue(j).message.find("not PASS, FAIL or SKIPPED"), std::string::npos) << issue(j).message;
  j = current();
  j["sweeps"].begin().value()["status"] = "DONE";
  EXPECT_NE(issue(j).message.find("not COMPLETED, FAILED or NOT RUN"), std::string::npos) << issue(j).message;
  // Every status word the writer uses reads back to its value.
  for (auto s : {cvs::TestStatus::Pass, cvs::TestStatus::Fail, cvs::TestStatus::Skipped})
    EXPECT_EQ(cvs::test_status_from_string(cvs::to_string(s)), s);
  for (auto s : {cvs::SweepStatus::Completed, cvs::SweepStatus::Failed, cvs::SweepStatus::NotRun})
    EXPECT_EQ(cvs::sweep_status_from_string(cvs::to_string(s)), s);
  j = current();
  j["sweeps"].begin().value()["metrics"]["final_loss"] = "low";
  EXPECT_NE(issue(j).pointer.find("/metrics/final_loss"), std::string::npos);
  EXPECT_NE(issue(j).fix.find("results.json"), std::string::npos);
}

// One severity order wherever outcomes combine: a missed gate (FAIL) is the verdict over an
// infrastructure ERROR, in a session's status and in a certification tier's alike.
TEST(Outcomes, OneSeverityOrderFailOverErrorOverInconclusive) {
  using cvs::Outcome;
  EXPECT_EQ(cvs::worst_of(Outcome::Error, Outcome::Fail), Outcome::Fail);
  EXPECT_EQ(cvs::worst_of(Outcome::Fail, Outcome::Error), Outcome::Fail);
  EXPECT_EQ(cvs::worst_of(Outcome::Inconclusive, Outcome::Error), Outcome::Error);
  EXPECT_EQ(cvs::worst_of(Outcome::Pass, Outcome::Inconclusive), Outcome::Inconclusive);
  EXPECT_EQ(cvs::worst_of(Outcome::Record, Outcome::Skipped), Outcome::Record);
  cvs::Results r;
  r.stages.resize(2);
  r.stages[0].status = cvs::TestStatus::Fail;
  r.stages[0].outcome = Outcome::Error;
  EXPECT_EQ(r.status(), Outcome::Error);
  r.stages[1].status = cvs::TestStatus::Fail;
  r.stages[1].outcome = Outcome::Fail;
  EXPECT_EQ(r.status(), Outcome::Fail);
}
