// The gtest TestEventListener that records every test (status, message, RecordProperty values)
// and, when the program ends, writes results.json and report.html into the session's folder.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "cvs/test_record.hpp"

namespace cvs::report {

class ReportListener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override;
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override;
  const std::vector<TestRecord>& records() const { return records_; }

 private:
  std::vector<TestRecord> records_;
};

}  // namespace cvs::report
