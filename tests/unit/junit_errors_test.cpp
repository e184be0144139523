// The JUnit rewrite that gives ERROR stages an <error> element (gtest writes only <failure>).
#include <gtest/gtest.h>

#include "cvs/junit_errors.hpp"

namespace {

// The shape gtest writes (trimmed): one suite with an ERROR stage and a failed gate, one passing.
const char* kXml = R"(<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="2" disabled="0" errors="0" time="1" name="AllTests">
  <testsuite name="test_setup" tests="1" failures="1" disabled="0" skipped="0" errors="0" time="0">
    <testcase name="containers_and_devices" status="run" result="completed" time="0" classname="test_setup">
      <failure message="stages.cpp:30&#x0A;ERROR: localhost: none of train_script_paths exists" type=""><![CDATA[stages.cpp:30
ERROR: localhost: none of train_script_paths exists]]></failure>
      <properties>
        <property name="outcome" value="ERROR"/>
      </properties>
    </testcase>
  </testsuite>
  <testsuite name="sweep/test_metric" tests="2" failures="1" disabled="0" skipped="0" errors="0" time="0">
    <testcase name="check/BS_2__tokens" status="run" result="completed" time="0" classname="sweep/test_metric">
      <failure message="training.tokens_per_sec_per_gpu: FAIL: 10 &lt; 20" type=""><![CDATA[FAIL]]></failure>
      <properties>
        <property name="outcome" value="FAIL"/>
      </properties>
    </testcase>
    <testcase name="check/BS_2__loss" status="run" result="completed" time="0" classname="sweep/test_metric" />
  </testsuite>
</testsuites>
)";

}  // namespace

TEST(JunitErrors, AnErrorStageGetsAnErrorElementAndTheCountsFollow) {
  const auto out = cvs::report::junit_failures_to_errors(kXml);
  const auto from = out.find("<testsuite name=\"test_setup\"");
  const auto setup = out.substr(from, out.find("</testsuite>", from) - from);
  EXPECT_EQ(setup.find("<failure"), std::string::npos)
      << "no <failure> left in the ERROR testcase: " << setup;
  EXPECT_NE(out.find("<error message=\"stages.cpp:30&#x0A;ERROR: localhost"), std::string::npos) << out;
  EXPECT_NE(out.find("]]></error>"), std::string::npos);
  EXPECT_NE(
      out.find(R"(<testsuite name="test_setup" tests="1" failures="0" disabled="0" skipped="0" errors="1")"),
      std::string::npos)
      << out;
  EXPECT_NE(
      out.find(
          R"(<testsuite name="sweep/test_metric" tests="2" failures="1" disabled="0" skipped="0" errors="0")"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(<testsuites tests="3" failures="1" disabled="0" errors="1")"), std::string::npos)
      << out;
  EXPECT_NE(out.find("<failure message=\"training.tokens_per_sec_per_gpu: FAIL"), std::string::npos)
      << "a missed gate stays a <failure>";
  // Nothing to do without an ERROR stage: the text is unchanged.
  std::string plain = kXml;
  plain.replace(plain.find(R"(value="ERROR")"), 14, R"(value="FAIL")");
  const auto same = cvs::report::junit_failures_to_errors(plain);
  EXPECT_EQ(same.find("<error"), std::string::npos);
}
