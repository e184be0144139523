#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cvs/config/config.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/thresholds.hpp"

namespace cvs::test {

std::filesystem::path data(const std::string& rel);
std::string read_file(const std::filesystem::path& p);
nlohmann::ordered_json read_json(const std::filesystem::path& p);

// The spec's example config with every <changeme> replaced (loads cleanly).
nlohmann::ordered_json spec_example_untagged();
// Loads JSON as if it lived at tests/data/configs/<name> (so the threshold file resolves).
SuiteConfig load_json(const nlohmann::ordered_json& j, const std::string& name = "test_config.json");
// The issues loading j raises (empty when it loads).
std::vector<ConfigIssue> issues_of(const nlohmann::ordered_json& j,
                                   const std::string& name = "test_config.json");
// True when some issue sits at exactly `pointer` and its message contains `needle`.
::testing::AssertionResult has_issue(const std::vector<ConfigIssue>& issues, const std::string& pointer,
                                     const std::string& needle = "");

// The issues `parse` raises as a ConfigError; none when it returns.
template <class Parse>
std::vector<ConfigIssue> issues_raised(Parse&& parse) {
  try {
    parse();
  } catch (const ConfigError& e) {
    return e.issues();
  }
  return {};
}

// A gate: metric, kind and value (the rest as a threshold file leaves it).
ThresholdSpec threshold_spec(const std::string& metric, ThresholdKind kind, double value);

struct Proc {
  int exit_code = -1;
  std::string out;
};
// Runs a command through /bin/sh, capturing stdout+stderr.
Proc run_command(const std::string& cmd);

// The lines of v, each ended by a newline.
std::string joined(const std::vector<std::string>& v);
// Every word names GPU 5 and no other of GPUs 0-7 (the node tests' bad GPU; `what` says which words).
void names_only_gpu5(const std::string& words, const std::string& what);

}  // namespace cvs::test

namespace cvs::test {
// xmllint --schema tests/data/junit/junit-10.xsd on `xml`: success, or its complaint (Jenkins'
// xunit-plugin schema; a JUnit file the tool writes passes it whole).
::testing::AssertionResult valid_junit(const std::string& xml);
}  // namespace cvs::test
