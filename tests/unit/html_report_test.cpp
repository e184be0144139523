// The HTML report rendered from a real session's results.json.
#include <gtest/gtest.h>

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
