// JUnit files as Jenkins reads them (reports/cvs/junit.hpp): every file the tool writes passes
// xunit-plugin's junit-10.xsd whole (xmllint, the schema kept as test data), a session's names are
// its suite's own, ERROR is <error> from the typed outcome, times are the stages' own, and the
// counts are the cases'.
#include <gtest/gtest.h>

#include <regex>

#include "cvs/certify/certificate.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/junit.hpp"
#include "cvs/results/results_file.hpp"
#include "test_helpers.hpp"

using cvs::Outcome;
using cvs::TestStatus;

namespace {

cvs::Results a_real_session() {
  return cvs::read_results(cvs::test::data("results/cpu_single_results.json"));
}

// The attribute `name` of the element that opens with `open` (e.g. `<testsuites `).
std::string attr(const std::string& xml, const std::string& open, const std::string& name) {
  const auto at = xml.find(open);
  if (at == std::string::npos) return "<no " + open + ">";
  const auto end = xml.find('>', at);
  std::smatch m;
  const std::string tag = xml.substr(at, end - at);
  return std::regex_search(tag, m, std::regex(" " + name + "=\"([^\"]*)\"")) ? m[1].str() : "<none>";
}

}  // namespace

TEST(Junit, APassingSessionIsValidWithItsSuitesNamesAndTimes) {
  const auto r = a_real_session();
  const auto x = cvs::report::render_session_junit(r);
  EXPECT_TRUE(cvs::test::valid_junit(x));
  EXPECT_EQ(attr(x, "<testsuites ", "name"), "jaxmaxtext_single") << "never gtest's AllTests";
  EXPECT_EQ(attr(x, "<testsuites ", "tests"), std::to_string(r.stages.size()));
  EXPECT_EQ(attr(x, "<testsuites ", "errors"), "0");
  EXPECT_EQ(attr(x, "<testsuite ", "name"), "jaxmaxtext_single.test_setup");
  EXPECT_NE(x.find("<testcase name=\"containers_and_devices\" classname=\"jaxmaxtext_single.test_setup\" "
                   "time=\"2.059\""),
            std::string::npos)
      << "the setup's own seconds";
  EXPECT_NE(x.find("classname=\"jaxmaxtext_single.sweep/test_metric\""), std::string::npos);
  double sum = 0;
  for (const auto& s : r.stages) sum += s.seconds;
  EXPECT_NEAR(std::stod(attr(x, "<testsuites ", "time")), sum, 0.01);
}

TEST(Junit, ErrorIsAnErrorElementAndTheCountsAreTheCases) {
  auto r = a_real_session();
  r.stages[0].status = TestStatus::Fail;
  r.stages[0].outcome = Outcome::Error;
  r.stages[0].message = "ERROR: n3: unreachable: ssh: connect to host 10.0.0.3 port 22: Connection refused";
  r.stages[1].status = TestStatus::Fail;
  r.stages[1].outcome = Outcome::Fail;
  r.stages[1].message = "smoke: loss is nan at step 2 <bad>\nsecond line";
  r.stages[2].status = TestStatus::Skipped;
  r.stages[2].outcome = Outcome::Skipped;
  r.stages[2].message = "setup failed: skipped";
  const auto x = cvs::report::render_session_junit(r);
  EXPECT_TRUE(cvs::test::valid_junit(x));
  EXPECT_EQ(attr(x, "<testsuites ", "errors"), "1");
  EXPECT_EQ(attr(x, "<testsuites ", "failures"), "1");
  EXPECT_EQ(attr(x, "<testsuite name=\"jaxmaxtext_single.test_setup\"", "errors"), "1");
  EXPECT_EQ(attr(x, "<testsuite name=\"jaxmaxtext_single.sweep/test_training_run\"", "skipped"), "1");
  EXPECT_NE(x.find("<error message=\"ERROR: n3: unreachable"), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"smoke: loss is nan at step 2 &lt;bad&gt;\">"), std::string::npos)
      << "the message is the first line; the text the whole";
  EXPECT_NE(x.find("<skipped message=\"setup failed: skipped\""), std::string::npos);
}

TEST(Junit, AControlCharacterInAMessageKeepsTheFileReadable) {
  auto r = a_real_session();
  r.stages[1].status = TestStatus::Fail;
  r.stages[1].outcome = Outcome::Fail;
  r.stages[1].message = "the log said \x1b[31mFatal\x1b[0m";
  const auto x = cvs::report::render_session_junit(r);
  EXPECT_TRUE(cvs::test::valid_junit(x));
  EXPECT_NE(x.find("the log said [31mFatal[0m"), std::string::npos);
}

TEST(Junit, AFleetRunsNodesWithTheirTimesAndAnUnreachableNodeAnError) {
  std::vector<cvs::FleetNode> nodes;
  for (int i = 0; i < 5; ++i) {
    cvs::FleetNode n;
    n.name = "n" + std::to_string(i);
    n.status = Outcome::Pass;
    n.figures = {{{"BS=4", "tokens_per_sec_per_gpu"}, 10000.0 + 20 * i}};
    n.seconds = 60 + i;
    nodes.push_back(n);
  }
  nodes[4].status = Outcome::Error;
  nodes[4].failure = "n4: unreachable";
  nodes[4].figures.clear();
  const auto s = cvs::score_fleet(nodes, {});
  const auto x = cvs::report::render_fleet_junit(s, nodes, "jaxmaxtext_fleet");
  EXPECT_TRUE(cvs::test::valid_junit(x));
  EXPECT_EQ(attr(x, "<testsuites ", "errors"), "1") << x;
  EXPECT_EQ(attr(x, "<testsuites ", "time"), "310.000");
  EXPECT_NE(x.find("name=\"node.n1\" classname=\"jaxmaxtext_fleet.fleet\" time=\"61.000\"/>"),
            std::string::npos)
      << x;
}

TEST(Junit, ACertificationsTiersWithTheirTimesAndNoAttributeTheSchemaRefuses) {
  cvs::Certificate c;
  c.inputs.hosts = {"a", "b"};
  cvs::TierRecord pre;
  pre.kind = cvs::TierKind::Preflight;
  pre.state = cvs::TierState::Decided;
  pre.outcome = Outcome::Pass;
  pre.seconds = 12.5;
  cvs::TierRecord nodes = pre;
  nodes.kind = cvs::TierKind::Nodes;
  nodes.outcome = Outcome::Error;
  nodes.summary = "every run failed to start";
  nodes.seconds = 30;
  cvs::TierRecord links = pre;
  links.kind = cvs::TierKind::Links;
  links.state = cvs::TierState::Pending;
  links.why_not_run = "the nodes tier ended ERROR";
  links.seconds = 0;
  c.tiers = {pre, nodes, links};
  const auto x = cvs::report::render_certificate_junit(c);
  EXPECT_TRUE(cvs::test::valid_junit(x));
  EXPECT_EQ(attr(x, "<testsuites ", "errors"), "1");
  EXPECT_EQ(attr(x, "<testsuites ", "time"), "42.500");
  EXPECT_NE(x.find("<skipped message=\"the nodes tier ended ERROR\""), std::string::npos) << x;
}
