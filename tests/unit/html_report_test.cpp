// The HTML report rendered from a real session's results.json.
#include <gtest/gtest.h>

#include <filesystem>

#include "cvs/html_report.hpp"
#include "cvs/results/compare.hpp"
#include "cvs/results/results_file.hpp"
#include "test_helpers.hpp"

namespace {
nlohmann::ordered_json results() {
  return cvs::test::read_json(cvs::test::data("results/cpu_single_results.json"));
}
}  // namespace

TEST(HtmlReport, HasVerdictCountsSweepsPlotsAndLinksAndNoNetwork) {
  const auto html = cvs::report::render_html(cvs::results_from_json(results()));
  EXPECT_NE(html.find("<title>jaxmaxtext_single PASS</title>"), std::string::npos);
  EXPECT_NE(html.find("Sweep <code>BS=2,PRECISION=BF16,SL=128</code>"), std::string::npos);
  EXPECT_NE(html.find("<polyline class=\"loss\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"step time distribution\""), std::string::npos);
  EXPECT_NE(html.find("href=\"runs/BS_2__PRECISION_BF16__SL_128/node-0/training.log\""), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

// A session of this build (the README's run, the compile cache warm): each sweep says where its
// run's time went, from the head's log.
TEST(HtmlReport, EachSweepSaysWhereItsRunsTimeWent) {
  const auto r = cvs::read_results(cvs::test::data("results/cpu_single_phases_results.json"));
  const auto html = cvs::report::render_html(r);
  std::size_t lines = 0;
  for (auto at = html.find("Where the time went (localhost's log): start-up "); at != std::string::npos;
       at = html.find("Where the time went (localhost's log): start-up ", at + 1))
    ++lines;
  EXPECT_EQ(lines, r.sweeps.size());
  EXPECT_NE(html.find("(the train step from the compile cache), training "), std::string::npos);
  const auto& p = *r.sweeps.front().second.run.nodes.front().phases;
  EXPECT_GT(p.training_s, 0);
  EXPECT_NEAR(p.total(), r.sweeps.front().second.run.wall_seconds, 1.0)
      << "the run's wall time, less the launch";
}

TEST(HtmlReport, EscapesWhatLogsAndConfigsBring) {
  auto r = results();
  r["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["run"]["failure"] = "node <b>x</b> said \"boom\" & left";
  r["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["run"]["first_error"] = {
      {"node", "n<1>"}, {"pattern", "NCCL ERROR"}, {"line_no", 7}, {"line", "<script>alert(1)</script>"}};
  const auto html = cvs::report::render_html(cvs::results_from_json(r));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("node &lt;b&gt;x&lt;/b&gt; said &quot;boom&quot; &amp; left"), std::string::npos);
}

TEST(HtmlReport, BaselineSectionShowsRegressions) {
  auto old = results(), now = results();
  auto& m = now["sweeps"]["BS=4,PRECISION=BF16,SL=128"]["metrics"];
  m["tokens_per_sec_per_gpu"] = m["tokens_per_sec_per_gpu"].get<double>() / 2;
  auto cmp =
      cvs::to_json(cvs::compare_results(cvs::results_from_json(old), cvs::results_from_json(now), 5.0), 5.0);
  cmp["baseline"] = "old/results.json";
  now["baseline_comparison"] = cmp;
  const auto html = cvs::report::render_html(cvs::results_from_json(now));
  EXPECT_NE(html.find("Compared with the baseline"), std::string::npos);
  EXPECT_NE(html.find("regression</p>"), std::string::npos);
  EXPECT_NE(html.find("-50"), std::string::npos);
}

// `--summary-md FILE` (one reporter file and one row of output_options(), offered by every front
// end): the real H200 neighbour session as a CI job summary.
TEST(MarkdownSummary, TheVerdictTheFailingGatesWithTheirIntervalsAndTheLinks) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "summary_md";
  std::filesystem::create_directories(dir);
  const auto md = dir / "summary.md";
  std::filesystem::remove(md);
  const auto p = cvs::test::run_command(
      std::string(CVS_BINARY) + " report " + cvs::test::data("h200/llama1b_neighbour.results.json").string() +
      " --out " + (dir / "r.html").string() + " --summary-md " + md.string());
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const auto text = cvs::test::read_file(md);
  EXPECT_NE(text.find("## jaxmaxtext_single: **FAIL**"), std::string::npos) << text;
  EXPECT_NE(
      text.find("| `BS=4,PRECISION=BF16,SL=2048` | training.tokens_per_sec_per_gpu | **FAIL** | 24253.8 | "
                "[24190.4, 24318.6] | min_tok_s 45355.9 |"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("wholly fails min_tok_s 45355.9 tok/s"), std::string::npos) << text;
  EXPECT_EQ(text.find("training.eval_loss"), std::string::npos) << "N/A gates are not failures";
  EXPECT_NE(text.find("[report.html]("), std::string::npos) << text;
  EXPECT_NE(p.out.find("summary " + md.string()), std::string::npos) << p.out;
}
