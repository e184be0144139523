// One finished gtest test as the report sees it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cvs::report {

struct TestRecord {
  std::string full_name;  // e.g. sweep/test_training_run.run/BS_2__PRECISION_BF16__SL_128
  std::string stage;      // test_setup, test_smoke, test_training_run, test_metric, checkpoint_resume...
  std::string status;     // PASS | FAIL | SKIPPED
  std::string message;    // failure or skip reason, or the stage's one-line summary
  double seconds = 0;
  std::vector<std::pair<std::string, std::string>> properties;
  std::string property(const std::string& key) const {
    for (const auto& [k, v] : properties)
      if (k == key) return v;
    return "";
  }
};

}  // namespace cvs::report
