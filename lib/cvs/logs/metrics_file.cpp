#include "cvs/logs/metrics_file.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cvs {
namespace {

// Python's json.dumps writes NaN, Infinity and -Infinity bare; quote them outside strings.
std::string quote_nonfinite(const std::string& line) {
  std::string out;
  out.reserve(line.size() + 16);
  bool in_str = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_str) {
      out += c;
      if (c == '\\' && i + 1 < line.size())
        out += line[++i];
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') {
      in_str = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (const char* tok : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::char_traits<char>::length(tok);
      if (line.compare(i, n, tok) == 0) {
        out += '"';
        out += tok;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

std::optional<double> number(const nlohmann::json& row, const char* key) {
  auto it = row.find(key);
  if (it == row.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const auto s = it->get<std::string>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

bool same_loss(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

}  // namespace

std::vector<StepRecord> parse_metrics_file(const std::string& text, const std::string& source) {
  std::vector<StepRecord> out;
  std::istringstream in(text);
  std::string line;
  long long line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(quote_nonfinite(line));
    } catch (const nlohmann::json::parse_error& e) {
      throw MetricsError(source + ":" + std::to_string(line_no) + ": not a JSON object: " + e.what());
    }
    auto loss = number(row, "learning/loss");
    auto step = number(row, "step");
    if (!loss || !step) continue;  // eval rows and other metric types
    StepRecord r;
    r.step = static_cast<long long>(*step);
    r.loss = *loss;
    r.seconds = number(row, "perf/step_time_seconds");
    r.tflops_per_device = number(row, "perf/per_device_tflops_per_sec");
    r.tokens_per_device = number(row, "perf/per_device_tokens_per_sec");
    r.total_weights = number(row, "learning/total_weights");
    r.line_no = line_no;
    if (!out.empty() && out.back().step == r.step) {
      if (same_loss(out.back().loss, r.loss)) continue;  // the same step from another process
      throw MetricsError(source + ":" + std::to_string(line_no) + ": step " + std::to_string(r.step) +
                         " appears twice with different losses: two runs wrote into one metrics_file");
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace cvs
