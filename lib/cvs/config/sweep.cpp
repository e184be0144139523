#include "cvs/config/sweep.hpp"

#include "cvs/catalog/gpu_catalog.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "cvs/config/config_error.hpp"

#include <spdlog/spdlog.h>

namespace cvs {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::optional<double> parse_positive(const std::string& v) {
  double d = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(d) || d <= 0) return std::nullopt;
  return d;
}

std::optional<long long> parse_positive_int(const std::string& v) {
  long long n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n <= 0) return std::nullopt;
  return n;
}

}  // namespace

std::string to_string(Precision p) {
  return p == Precision::BF16 ? "BF16" : "FP8";
}

SweepKey parse_sweep_key(const std::string& key, const std::string& file, const std::string& pointer) {
  IssueList issues(file);
  SweepKey out;
  out.text = key;
  const std::string fix_syntax =
      "write the key as NAME=VALUE pairs joined by ',' from BS, PRECISION, SL, e.g. "
      "\"BS=3,PRECISION=BF16,SL=8192\"";
  if (key.empty()) {
    issues.add(pointer, "empty sweep key", fix_syntax);
    issues.throw_if_any();
  }
  std::set<std::string> seen;
  for (const auto& token : split(key, ',')) {
    const auto eq = token.find('=');
    if (token.empty() || eq == std::string::npos || eq == 0 || eq + 1 == token.size()) {
      issues.add(pointer, "sweep key '" + key + "': malformed token '" + token + "'", fix_syntax);
      continue;
    }
    const std::string name = token.substr(0, eq);
    const std::string value = token.substr(eq + 1);
    if (!seen.insert(name).second) {
      issues.add(pointer, "sweep key '" + key + "': token " + name + " appears twice",
                 "keep one " + name + "=... in the key");
      continue;
    }
    if (name == "BS") {
      if (auto d = parse_positive(value)) {
        if (std::floor(*d) == *d && *d < 1e15)
          out.batch_size = static_cast<long long>(*d);
        else
          out.batch_size = *d;
      } else {
        issues.add(pointer, "sweep key '" + key + "': BS=" + value + " is not a positive number",
                   "set BS to the per-device batch size, e.g. BS=3");
      }
    } else if (name == "SL") {
      if (auto n = parse_positive_int(value))
        out.seq_len = *n;
      else
        issues.add(pointer, "sweep key '" + key + "': SL=" + value + " is not a positive integer",
                   "set SL to the sequence length, e.g. SL=8192");
    } else if (name == "PRECISION") {
      if (value == "BF16")
        out.precision = Precision::BF16;
      else if (value == "FP8")
        out.precision = Precision::FP8;
      else
        issues.add(pointer, "sweep key '" + key + "': PRECISION=" + value + " is not BF16 or FP8",
                   "use PRECISION=BF16 or PRECISION=FP8");
    } else {
      issues.add(pointer, "sweep key '" + key + "': unknown token '" + name + "'",
                 "use only BS, PRECISION and SL in the key; put other overrides inside the sweep's {}");
    }
  }
  issues.throw_if_any();
  return out;
}

nlohmann::ordered_json key_overrides(const SweepKey& key, const std::string& gpu_name,
                                     const std::string& file, const std::string& pointer) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  if (key.batch_size) o["per_device_batch_size"] = *key.batch_size;
  if (key.precision) {
    if (*key.precision == Precision::BF16) {
      o["quantization"] = "";
    } else {
      auto flavor = fp8_flavor(gpu_name);
      if (!flavor)
        throw ConfigError(
            file, pointer,
            "sweep key '" + key.text + "' asks for FP8 but gpu_name '" + gpu_name + "' has no FP8 flavor",
            "use PRECISION=BF16, or set gpu_name to mi300x/mi325x/mi3xx (nanoo_fp8), mi35x or "
            "h100/h200/gb200 (fp8)");
      if (!known_gpu_name(gpu_name))
        spdlog::warn(
            "{}: gpu_name '{}' is not a label cvs-maxtext knows: sweep {} runs FP8 as {} (the spec's "
            "rule: mi35* -> fp8, every other label -> nanoo_fp8)",
            file, gpu_name, key.text, *flavor);
      o["quantization"] = *flavor;
    }
  }
  if (key.seq_len) o["max_target_length"] = *key.seq_len;
  return o;
}

std::string normalize_quantization(const std::string& logged) {
  const std::string prefix = "QuantizationType.";
  if (logged.rfind(prefix, 0) != 0) return logged;
  const std::string name = logged.substr(prefix.size());
  if (name == "NONE") return "";
  if (name == "FP8_NANO_V2") return "fp8_nanoo";
  if (name == "TE_FP8_DS") return "te_fp8_delayedscaling";
  if (name == "TE_FP8_CS") return "te_fp8_currentscaling";
  std::string v = name;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}

std::string sweep_test_name(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == ',')
      out += "__";
    else if (c == '=')
      out += '_';
    else if (c == '.')
      out += 'p';
    else if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
    else
      out += '_';
  }
  return out;
}

std::string sweep_key_from_test_name(const std::string& name) {
  std::string out;
  std::size_t i = 0;
  bool in_value = false;
  while (i < name.size()) {
    if (name.compare(i, 2, "__") == 0) {
      out += ',';
      in_value = false;
      i += 2;
    } else if (name[i] == '_' && !in_value) {
      out += '=';
      in_value = true;
      ++i;
    } else {
      out += (in_value && name[i] == 'p') ? '.' : name[i];
      ++i;
    }
  }
  return out;
}

}  // namespace cvs
