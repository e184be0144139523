// JUnit XML as Jenkins' junit step and xunit-plugin's junit-10.xsd read it, written from typed
// records (never by rewriting another program's file): a session's stages, a fleet run's nodes, a
// certification's tiers and nodes. Every file has a root and suite names of its own (the suite's
// name first: two suites published by one build never merge), `time` and `errors` on every suite,
// ERROR as <error>, a skip with its own reason.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cvs/results/results_file.hpp"

namespace cvs {
struct Certificate;
struct FleetScore;
struct FleetNode;
}  // namespace cvs

namespace cvs::report {

enum class JunitVerdict { Pass, Failure, Error, Skipped };

struct JunitCase {
  std::string name;
  double seconds = 0;
  JunitVerdict verdict = JunitVerdict::Pass;
  std::string message;  // the verdict's one line (failure, error, skipped)
  std::string detail;   // the element's text ("" : the message)
  std::vector<std::pair<std::string, std::string>> properties;  // as <system-out> lines
};

struct JunitSuite {
  std::string name;  // also every case's classname
  std::string timestamp;
  std::vector<JunitCase> cases;
};

// The document: <testsuites name=root> with each suite's counts and the sum of its cases' times.
std::string render_junit(const std::string& root, const std::vector<JunitSuite>& suites);

// A session's stages: a suite per gtest test suite, named "<suite>.<test suite>" (e.g.
// "jaxmaxtext_single.sweep/test_metric"), each stage's own seconds and verdict.
std::string render_session_junit(const Results& r);
// A fleet run: a case per node, its run's seconds; a suspect a failure, a node whose run ended
// ERROR (unreachable, a launch that failed) an error.
std::string render_fleet_junit(const FleetScore& score, const std::vector<FleetNode>& nodes,
                               const std::string& suite);
// A certification: a case per tier (its seconds; not run: skipped with why) and per node.
std::string render_certificate_junit(const Certificate& c);

}  // namespace cvs::report
