#include <gtest/gtest.h>

#include <cmath>

#include "cvs/config/config_error.hpp"
#include "cvs/config/thresholds.hpp"
#include "cvs/verdicts/evaluation.hpp"
#include "test_helpers.hpp"

using cvs::Outcome;

using cvs::test::threshold_spec;

namespace {
cvs::RunMetrics metrics(std::map<std::string, double> v) {
  cvs::RunMetrics m;
  for (const auto& [name, value] : v) m.values.set(*cvs::metric_from_name(name), value);
  return m;
}
std::vector<cvs::ConfigIssue> issues_of(const std::string& text) {
  return cvs::test::issues_raised([&] { cvs::parse_thresholds(text, "t_threshold.json"); });
}
}  // namespace

TEST(Thresholds, SpecSnippetLoads) {
  auto tf = cvs::load_thresholds(
      cvs::test::data("configs/mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json"));
  const auto* cell = tf.cell("BS=3,PRECISION=BF16,SL=8192");
  ASSERT_NE(cell, nullptr);
  ASSERT_EQ(cell->size(), 5u);
  EXPECT_EQ((*cell)[0].metric, "tflops_per_sec_per_gpu");
  EXPECT_EQ((*cell)[4].kind, cvs::ThresholdKind::Info);
  EXPECT_EQ(tf.comments.count("_node_count_comment"), 1u);
  EXPECT_EQ(tf.cell("BS=3,PRECISION=FP8,SL=8192"), nullptr);
}

TEST(Thresholds, EveryKind) {
  using K = cvs::ThresholdKind;
  auto m = metrics({{"tokens_per_sec_per_gpu", 1200},
                    {"step_time_p95_ms", 900},
                    {"final_loss", 5},
                    {"tokens_per_sec_total", 2400}});
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("tokens_per_sec_per_gpu", K::MinTokS, 1217),
                                          threshold_spec("step_time_p95_ms", K::MaxMs, 1000),
                                          threshold_spec("final_loss", K::Within, 5.2)};
  cell[2].tolerance_pct = 5.0;
  auto ratio = threshold_spec("tokens_per_sec_total", K::MinRatio, 1.9);
  ratio.reference = "tokens_per_sec_per_gpu";
  cell.push_back(ratio);
  // Speed metrics are decided on their steady-state interval (step_stats_test.cpp); values with
  // no step records behind them give no evidence either way.
  auto tok = cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &cell, true);
  EXPECT_EQ(tok.outcome, Outcome::Inconclusive);
  EXPECT_NE(tok.message.find("tok/s"), std::string::npos);
  auto st = cvs::evaluate_metric("step_time_p95_ms", m, &cell, true);
  EXPECT_EQ(st.outcome, Outcome::Inconclusive);
  EXPECT_NE(st.message.find("ms"), std::string::npos);
  EXPECT_EQ(cvs::evaluate_metric("final_loss", m, &cell, true).outcome, Outcome::Pass);  // |5-5.2| <= 0.26
  EXPECT_EQ(cvs::evaluate_metric("tokens_per_sec_total", m, &cell, true).outcome,
            Outcome::Pass);  // 2.0 >= 1.9
  std::vector<cvs::ThresholdSpec> mn = {threshold_spec("final_loss", K::Min, 6),
                                        threshold_spec("tokens_per_sec_per_gpu", K::Max, 1000)};
  EXPECT_EQ(cvs::evaluate_metric("final_loss", m, &mn, true).outcome, Outcome::Fail);
  EXPECT_EQ(cvs::evaluate_metric("tokens_per_sec_per_gpu", m, &mn, true).outcome, Outcome::Inconclusive);
}

TEST(Thresholds, BoundariesAreInclusive) {
  using K = cvs::ThresholdKind;
  auto m = metrics({{"final_loss", 15.0}, {"loss_decreased", 1}});
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("final_loss", K::Max, 15.0),
                                          threshold_spec("loss_decreased", K::Min, 1)};
  EXPECT_EQ(cvs::evaluate_metric("final_loss", m, &cell, true).outcome, Outcome::Pass);
  EXPECT_EQ(cvs::evaluate_metric("loss_decreased", m, &cell, true).outcome, Outcome::Pass);
}

TEST(Thresholds, RecordWhenNotEnforcedInfoOrNoCell) {
  using K = cvs::ThresholdKind;
  auto m = metrics({{"final_loss", 20}, {"step_time_p95_ms", 10}});
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("final_loss", K::Max, 15),
                                          threshold_spec("step_time_p95_ms", K::Info, 3600000)};
  auto not_enforced = cvs::evaluate_metric("final_loss", m, &cell, false);
  EXPECT_EQ(not_enforced.outcome, Outcome::Record);
  EXPECT_NE(not_enforced.message.find("would FAIL"), std::string::npos);
  EXPECT_EQ(cvs::evaluate_metric("step_time_p95_ms", m, &cell, true).outcome, Outcome::Record);
  EXPECT_EQ(cvs::evaluate_metric("final_loss", m, nullptr, true).outcome, Outcome::Record);
}

TEST(Thresholds, NotProducedIsNA) {
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("eval_loss", cvs::ThresholdKind::Max, 3)};
  EXPECT_EQ(cvs::evaluate_metric("eval_loss", metrics({}), &cell, true).outcome, Outcome::NA);
}

TEST(Thresholds, NanNeverPassesMax) {
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("final_loss", cvs::ThresholdKind::Max, 15)};
  auto e = cvs::evaluate_metric("final_loss", metrics({{"final_loss", std::nan("")}}), &cell, true);
  EXPECT_EQ(e.outcome, Outcome::Fail);
  EXPECT_NE(e.message.find("non-finite"), std::string::npos);
}

TEST(Thresholds, MalformedSpecsAreConfigErrorsWithPointers) {
  auto i = issues_of(R"({"_node_count_comment": "2N",
    "BS=3,PRECISION=BF16,SL=8192": {
      "training.tflops_per_sec_per_gpu": {"kind": "minimum", "value": 1},
      "training.final_loss": {"kind": "within", "value": 5},
      "training.tokens_per_sec_total": {"kind": "min_ratio", "value": 1},
      "training.step_time_p95_ms": {"kind": "max_ms"},
      "training.tokens_per_sec_per_gpus": {"kind": "min", "value": 1},
      "final_loss": {"kind": "max", "value": 1}
    },
    "BS=3,PRECISION=BF17": {}})");
  const std::string c = "/BS=3,PRECISION=BF16,SL=8192";
  EXPECT_TRUE(cvs::test::has_issue(i, c + "/training.tflops_per_sec_per_gpu/kind", "unknown kind"));
  EXPECT_TRUE(cvs::test::has_issue(i, c + "/training.final_loss/tolerance_pct", "within"));
  EXPECT_TRUE(cvs::test::has_issue(i, c + "/training.tokens_per_sec_total/reference", "min_ratio"));
  const auto typo =
      issues_of(R"({"BS=2": {"training.final_loss": {"kind": "within", "value": 1, "tolerence_pct": 5}}})");
  ASSERT_TRUE(cvs::test::has_issue(typo, "/BS=2/training.final_loss/tolerence_pct", "unknown key"));
  for (const auto& issue : typo) {
    if (issue.pointer == "/BS=2/training.final_loss/tolerence_pct") {
      EXPECT_NE(issue.fix.find("did you mean 'tolerance_pct'"), std::string::npos) << issue.fix;
    }
  }
  EXPECT_TRUE(cvs::test::has_issue(i, c + "/training.step_time_p95_ms/value", "value"));
  EXPECT_TRUE(cvs::test::has_issue(i, c + "/training.tokens_per_sec_per_gpus", "unknown metric"));
  EXPECT_TRUE(cvs::test::has_issue(i, c + "/final_loss", "training."));
  EXPECT_TRUE(cvs::test::has_issue(i, "/BS=3,PRECISION=BF17", "BF17"));
}

TEST(Thresholds, TheLossCurveGateNeverFailsWhenThresholdsAreNotEnforced) {
  auto m = metrics({{"loss_curve_slope", 0.3}});  // rising loss
  cvs::LossCurve lc;
  lc.max_slope = 0.0;
  lc.enforce = true;
  EXPECT_EQ(cvs::evaluate_loss_curve(m, lc, true).outcome, Outcome::Fail);
  const auto rec = cvs::evaluate_loss_curve(m, lc, false);
  EXPECT_EQ(rec.outcome, Outcome::Record) << "enforce_thresholds: false records values but does not fail";
  EXPECT_NE(rec.message.find("enforce_thresholds is false: would FAIL"), std::string::npos) << rec.message;
  lc.enforce = false;
  EXPECT_EQ(cvs::evaluate_loss_curve(m, lc, true).outcome, Outcome::Record);
  m = metrics({{"loss_curve_slope", -0.2}});
  lc.enforce = true;
  EXPECT_EQ(cvs::evaluate_loss_curve(m, lc, true).outcome, Outcome::Pass);
  EXPECT_EQ(cvs::evaluate_loss_curve(metrics({}), lc, true).outcome, Outcome::NA);
}

// A failing gate's words carry its absolute bounds; an N/A names only the notes about its metric.
TEST(Thresholds, AFailingWithinOrRatioGateSaysItsAbsoluteBounds) {
  using K = cvs::ThresholdKind;
  auto m = metrics({{"final_loss", 6}, {"tokens_per_sec_total", 1500}, {"tokens_per_sec_per_gpu", 1000}});
  std::vector<cvs::ThresholdSpec> cell = {threshold_spec("final_loss", K::Within, 5.2)};
  cell[0].tolerance_pct = 5.0;
  auto ratio = threshold_spec("tokens_per_sec_total", K::MinRatio, 1.9);
  ratio.reference = "tokens_per_sec_per_gpu";
  cell.push_back(ratio);
  const auto within = cvs::evaluate_metric("final_loss", m, &cell, true);
  EXPECT_EQ(within.outcome, Outcome::Fail);
  EXPECT_NE(within.message.find("outside 5.2 +/- 5% [4.94, 5.46]"), std::string::npos) << within.message;
  const auto r = cvs::evaluate_metric("tokens_per_sec_total", m, &cell, true);
  EXPECT_EQ(r.outcome, Outcome::Fail);
  EXPECT_NE(r.message.find("(needs >= 1900"), std::string::npos) << r.message;
}

TEST(Thresholds, AnNAsWordsAreTheNotesAboutItsMetricOnly) {
  const std::vector<std::string> notes = {
      "no step line has TFLOP/s/device (or the 2023 TFLOP/s): the TFLOP/s figures are absent",
      "2 records left out of the speed figures in all (2 dispatch); the first 2 are named",
      "no eval line: eval_loss is absent"};
  EXPECT_EQ(cvs::notes_about("eval_loss", notes), std::vector<std::string>{notes[2]});
  EXPECT_EQ(cvs::notes_about("tflops_per_sec_per_gpu", notes), std::vector<std::string>{notes[0]});
  EXPECT_TRUE(cvs::notes_about("checkpoint_save_seconds", notes).empty());
}
