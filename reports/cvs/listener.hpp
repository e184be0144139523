// The gtest TestEventListener that records every test as a StageRecord (status, outcome,
// message, RecordProperty values) and, when the program ends, runs the session's reporters
// (reporters.hpp: results.json, report.html, and the exports and history the options ask for) on
// the Results its source builds from them. It knows no session: the suite hands it the source
// (fixtures::session_results), so reports/ depends on lib/ types only.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "cvs/reporters.hpp"
#include "cvs/results/results_file.hpp"

namespace cvs::report {

struct ReportTarget {
  std::filesystem::path folder;  // results.json and report.html go here
  Results results;
};
// The session's results for the stages as gtest ended them; nullopt: nothing to write.
using ReportSource = std::function<std::optional<ReportTarget>(std::vector<StageRecord>)>;

// The record of one ended test: its stage is the test suite's name after any "prefix/".
StageRecord stage_record(const ::testing::TestInfo& info);

class ReportListener : public ::testing::EmptyTestEventListener {
 public:
  ReportListener(ReportSource source, ReporterOptions options)
      : source_(std::move(source)), options_(std::move(options)) {}
  void OnTestEnd(const ::testing::TestInfo& info) override;
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override;
  const std::vector<StageRecord>& records() const { return records_; }
  // The session's status once written (nullopt before, or when there was nothing to write).
  std::optional<Outcome> status() const { return status_; }

 private:
  std::optional<Outcome> status_;
  ReportSource source_;
  ReporterOptions options_;
  std::vector<StageRecord> records_;
};

}  // namespace cvs::report
