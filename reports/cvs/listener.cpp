#include "cvs/listener.hpp"

#include <cstdio>
#include <fstream>

#include "cvs/html_report.hpp"
#include "cvs/results_json.hpp"

namespace cvs::report {

void ReportListener::OnTestEnd(const ::testing::TestInfo& info) {
  const auto* r = info.result();
  TestRecord t;
  t.full_name = std::string(info.test_suite_name()) + "." + info.name();
  std::string suite = info.test_suite_name();
  if (auto slash = suite.find('/'); slash != std::string::npos) suite = suite.substr(slash + 1);
  t.stage = suite;
  t.seconds = static_cast<double>(r->elapsed_time()) / 1000.0;
  t.status = r->Failed() ? "FAIL" : (r->Skipped() ? "SKIPPED" : "PASS");
  for (int i = 0; i < r->total_part_count(); ++i) {
    const auto& part = r->GetTestPartResult(i);
    if (part.failed() || part.skipped()) {
      if (!t.message.empty()) t.message += "\n";
      t.message += part.message();
    }
  }
  for (int i = 0; i < r->test_property_count(); ++i) {
    const auto& p = r->GetTestProperty(i);
    t.properties.emplace_back(p.key(), p.value());
    if (std::string(p.key()) == "summary" && t.message.empty()) t.message = p.value();
  }
  records_.push_back(std::move(t));
}

void ReportListener::OnTestProgramEnd(const ::testing::UnitTest&) {
  auto& s = fixtures::Session::get();
  if (s.opts.output.empty()) return;
  const auto results = build_results(s, records_);
  const auto json_path = s.opts.output / "results.json";
  const auto html_path = s.opts.output / "report.html";
  std::ofstream(json_path) << results.dump(2) << "\n";
  std::ofstream(html_path) << render_html(results);
  std::fprintf(stderr, "\ncvs: %s: %s\ncvs: report  %s\ncvs: results %s\n", s.opts.suite_name.c_str(),
               results["status"].get<std::string>().c_str(), html_path.c_str(), json_path.c_str());
}

}  // namespace cvs::report
