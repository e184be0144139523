#include "cvs/junit.hpp"

#include <fmt/format.h>

#include <map>

#include "cvs/base/text.hpp"
#include "cvs/certify/certificate.hpp"
#include "cvs/fleet/fleet.hpp"

namespace cvs::report {
namespace {

// Text safe in XML 1.0: entities for the markup characters, and no control character but tab and
// newline (a terminal's escape sequence in a message would make the whole file unreadable).
std::string xml_text(const std::string& s) {
  std::string clean;
  clean.reserve(s.size());
  for (const char c : s)
    if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') clean += c;
  return html_escape(clean);
}

const char* element(JunitVerdict v) {
  switch (v) {
    case JunitVerdict::Failure:
      return "failure";
    case JunitVerdict::Error:
      return "error";
    case JunitVerdict::Skipped:
      return "skipped";
    case JunitVerdict::Pass:
      break;
  }
  return "";
}

struct Counts {
  std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void add(const JunitCase& c) {
    ++tests;
    failures += c.verdict == JunitVerdict::Failure;
    errors += c.verdict == JunitVerdict::Error;
    skipped += c.verdict == JunitVerdict::Skipped;
    seconds += c.seconds;
  }
};

std::string render_case(const std::string& classname, const JunitCase& c) {
  std::string out = fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3f}\"",
                                xml_text(c.name), xml_text(classname), c.seconds);
  if (c.verdict == JunitVerdict::Pass && c.properties.empty()) return out + "/>\n";
  out += ">\n";
  if (c.verdict != JunitVerdict::Pass)
    out += fmt::format("      <{0} message=\"{1}\">{2}</{0}>\n", element(c.verdict), xml_text(c.message),
                       xml_text(c.detail.empty() ? c.message : c.detail));
  if (!c.properties.empty()) {
    std::string lines;
    for (const auto& [k, v] : c.properties) lines += k + ": " + v + "\n";
    out += "      <system-out>" + xml_text(lines) + "</system-out>\n";
  }
  return out + "    </testcase>\n";
}

}  // namespace

std::string render_junit(const std::string& root, const std::vector<JunitSuite>& suites) {
  Counts all;
  std::string body;
  for (const auto& s : suites) {
    Counts n;
    std::string cases;
    for (const auto& c : s.cases) {
      n.add(c);
      all.add(c);
      cases += render_case(s.name, c);
    }
    body += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\"{}>\n{}"
        "  </testsuite>\n",
        xml_text(s.name), n.tests, n.failures, n.errors, n.skipped, n.seconds,
        s.timestamp.empty() ? "" : " timestamp=\"" + xml_text(s.timestamp) + "\"", cases);
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" "
      "errors=\"{}\" time=\"{:.3f}\">\n{}</testsuites>\n",
      xml_text(root), all.tests, all.failures, all.errors, all.seconds, body);
}

std::string render_session_junit(const Results& r) {
  std::vector<JunitSuite> suites;
  std::map<std::string, std::size_t> index;  // gtest test suite -> its place, in the order they ran
  for (const auto& st : r.stages) {
    const auto dot = st.test.find('.');
    const std::string group = st.test.substr(0, dot),
                      name = dot == std::string::npos ? st.test : st.test.substr(dot + 1);
    auto [it, fresh] = index.emplace(group, suites.size());
    if (fresh) suites.push_back({r.suite + "." + group, r.started_at, {}});
    JunitCase c;
    c.name = name;
    c.seconds = st.seconds;
    if (st.status == TestStatus::Skipped)
      c.verdict = JunitVerdict::Skipped;
    else if (st.status == TestStatus::Fail)
      c.verdict = st.outcome == Outcome::Error ? JunitVerdict::Error : JunitVerdict::Failure;
    if (c.verdict != JunitVerdict::Pass) {
      c.detail = st.message;
      c.message = st.message.substr(0, st.message.find('\n'));  // its own reason, one line
    }
    for (const auto& [k, v] : st.properties)
      if (k != "summary") c.properties.emplace_back(k, v);
    suites[it->second].cases.push_back(std::move(c));
  }
  return render_junit(r.suite, suites);
}

std::string render_fleet_junit(const FleetScore& score, const std::vector<FleetNode>& nodes,
                               const std::string& suite) {
  std::map<std::string, const FleetNode*> by_name;
  for (const auto& n : nodes) by_name.emplace(n.name, &n);
  JunitSuite s{suite + ".fleet", "", {}};
  for (const auto& n : score.nodes) {
    const auto it = by_name.find(n.name);
    const FleetNode* node = it == by_name.end() ? nullptr : it->second;
    JunitCase c;
    c.name = "node." + n.name;
    c.seconds = node ? node->seconds : 0.0;
    if (n.suspect) {
      c.verdict = node && node->status == Outcome::Error ? JunitVerdict::Error : JunitVerdict::Failure;
      c.message = fleet_reasons(n);
    }
    s.cases.push_back(std::move(c));
  }
  return render_junit(suite, {s});
}

std::string render_certificate_junit(const Certificate& c) {
  std::map<std::string, std::string> excluded;
  for (const auto& e : c.excluded) excluded.emplace(e.node, e.tier + ": " + e.evidence);
  JunitSuite tiers{"cvs_certify.tiers", c.started_at, {}}, nodes{"cvs_certify.nodes", c.started_at, {}};
  for (const auto& t : c.tiers) {
    JunitCase k;
    k.name = std::string("tier.") + to_string(t.kind);
    k.seconds = t.seconds;
    if (t.state != TierState::Decided) {
      k.verdict = JunitVerdict::Skipped;
      k.message = t.why_not_run;
    } else if (t.outcome != Outcome::Pass) {
      k.verdict = t.outcome == Outcome::Error ? JunitVerdict::Error : JunitVerdict::Failure;
      k.message = to_string(t.outcome, "?") + std::string(": ") + t.summary;
    }
    k.properties = {{"node_minutes", fmt::format("{:.2f}", t.node_minutes)}};
    tiers.cases.push_back(std::move(k));
  }
  for (const auto& h : c.inputs.hosts) {
    JunitCase k;
    k.name = "node." + h;
    if (const auto it = excluded.find(h); it != excluded.end()) {
      k.verdict = JunitVerdict::Failure;
      k.message = it->second;
    }
    nodes.cases.push_back(std::move(k));
  }
  return render_junit("cvs_certify", {tiers, nodes});
}

}  // namespace cvs::report
