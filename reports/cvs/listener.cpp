#include "cvs/listener.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cvs/html_report.hpp"

namespace cvs::report {

StageRecord stage_record(const ::testing::TestInfo& info) {
  const auto* r = info.result();
  StageRecord t;
  t.test = std::string(info.test_suite_name()) + "." + info.name();
  std::string suite = info.test_suite_name();
  if (auto slash = suite.find('/'); slash != std::string::npos) suite = suite.substr(slash + 1);
  t.stage = suite;
  t.seconds = static_cast<double>(r->elapsed_time()) / 1000.0;
  t.status = r->Failed() ? TestStatus::Fail : (r->Skipped() ? TestStatus::Skipped : TestStatus::Pass);
  for (int i = 0; i < r->total_part_count(); ++i) {
    const auto& part = r->GetTestPartResult(i);
    if (part.failed() || part.skipped()) {
      if (!t.message.empty()) t.message += "\n";
      std::string m = part.message();
      if (m.rfind("Failed\n", 0) == 0) m.erase(0, 7);  // gtest's own word for FAIL(): the reason follows
      t.message += m;
    }
  }
  for (int i = 0; i < r->test_property_count(); ++i) {
    const auto& p = r->GetTestProperty(i);
    t.properties.emplace_back(p.key(), p.value());
    if (std::string(p.key()) == "summary" && t.message.empty()) t.message = p.value();
  }
  if (const auto before = t.property(StageRecord::kSecondsBeforeProperty); !before.empty())
    t.seconds += std::strtod(before.c_str(), nullptr);
  t.outcome = stage_outcome(t.status, t.property("outcome"));
  return t;
}

void ReportListener::OnTestEnd(const ::testing::TestInfo& info) {
  records_.push_back(stage_record(info));
}

void ReportListener::OnTestProgramEnd(const ::testing::UnitTest&) {
  auto target = source_(records_);
  if (!target) return;
  const auto lines =
      run_reporters(reporters(options_), {.folder = target->folder, .results = &target->results});
  status_ = target->results.status();
  std::fprintf(stderr, "\ncvs: %s: %s\n", target->results.suite.c_str(), to_string(*status_).c_str());
  for (const auto& l : lines) std::fprintf(stderr, "cvs: %s\n", l.c_str());
}

}  // namespace cvs::report
