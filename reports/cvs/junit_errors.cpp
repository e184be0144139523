#include "cvs/junit_errors.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include "cvs/base/text.hpp"

namespace cvs::report {
namespace {

// Testcases of a block that hold a <failure / an <error element.
std::pair<int, int> count_cases(const std::string& block) {
  int failures = 0, errors = 0;
  for (std::size_t p = block.find("<testcase "); p != std::string::npos;
       p = block.find("<testcase ", p + 1)) {
    const std::size_t open_end = block.find('>', p);
    if (open_end == std::string::npos || block[open_end - 1] == '/') continue;
    const std::size_t close = block.find("</testcase>", p);
    const std::string tc = block.substr(p, close - p);
    failures += tc.find("<failure") != std::string::npos;
    errors += tc.find("<error") != std::string::npos;
  }
  return {failures, errors};
}

// Sets failures="F" errors="E" in the opening tag that starts at `at`.
void set_counts(std::string& xml, std::size_t at, std::pair<int, int> counts) {
  const std::size_t end = xml.find('>', at);
  std::string tag = xml.substr(at, end - at);
  tag = std::regex_replace(tag, std::regex(R"( failures="\d+")"),
                           " failures=\"" + std::to_string(counts.first) + "\"");
  tag = std::regex_replace(tag, std::regex(R"( errors="\d+")"),
                           " errors=\"" + std::to_string(counts.second) + "\"");
  xml.replace(at, end - at, tag);
}

}  // namespace

std::string junit_failures_to_errors(const std::string& xml) {
  std::string out;
  out.reserve(xml.size());
  std::size_t pos = 0;
  for (std::size_t tc = xml.find("<testcase ", pos); tc != std::string::npos;
       tc = xml.find("<testcase ", pos)) {
    out.append(xml, pos, tc - pos);
    const std::size_t open_end = xml.find('>', tc);
    const std::size_t close = xml.find("</testcase>", tc);
    if (open_end == std::string::npos || xml[open_end - 1] == '/' || close == std::string::npos) {
      pos = open_end == std::string::npos ? xml.size() : open_end + 1;
      out.append(xml, tc, pos - tc);
      continue;
    }
    std::string block = xml.substr(tc, close + 11 - tc);
    if (block.find(R"(name="outcome" value="ERROR")") != std::string::npos) {
      replace_all(block, "<failure ", "<error ");
      replace_all(block, "</failure>", "</error>");
    }
    out += block;
    pos = close + 11;
  }
  out.append(xml, pos, std::string::npos);
  // Recount every <testsuite> and the <testsuites> total.
  for (std::size_t p = out.find("<testsuite "); p != std::string::npos; p = out.find("<testsuite ", p + 1)) {
    const std::size_t close = out.find("</testsuite>", p);
    if (close == std::string::npos) break;
    set_counts(out, p, count_cases(out.substr(p, close - p)));
  }
  if (const std::size_t p = out.find("<testsuites"); p != std::string::npos)
    set_counts(out, p, count_cases(out));
  return out;
}

bool rewrite_junit_errors(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string xml = ss.str();
  if (xml.find(R"(name="outcome" value="ERROR")") == std::string::npos) return true;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << junit_failures_to_errors(xml);
  return static_cast<bool>(out);
}

}  // namespace cvs::report
