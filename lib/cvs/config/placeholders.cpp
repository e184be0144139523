#include "cvs/config/placeholders.hpp"

#include <algorithm>
#include <cctype>

namespace cvs {
namespace {

bool is_placeholder_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

}  // namespace

std::string Placeholders::path(const std::string& name) {
  if (auto it = done_.find(name); it != done_.end()) return it->second;
  if (auto start = std::find(stack_.begin(), stack_.end(), name); start != stack_.end()) {
    std::string chain;
    for (auto it = start; it != stack_.end(); ++it) chain += *it + " -> ";
    // Reported once, at the path whose reference closes the cycle.
    if (reported_cycles_.insert(name).second)
      issues_.add("/paths/" + pointer_token(stack_.back()), "placeholder cycle: " + chain + name,
                  "make one of these paths a literal path");
    return "";
  }
  stack_.push_back(name);
  std::string v = resolve(raw_.at(name), "/paths/" + pointer_token(name));
  stack_.pop_back();
  done_[name] = v;
  return v;
}

std::string Placeholders::resolve(const std::string& s, const std::string& ptr) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '{') {
      std::size_t j = i + 1;
      while (j < s.size() && is_placeholder_char(s[j])) ++j;
      if (j < s.size() && s[j] == '}' && j > i + 1 && !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        out += lookup(s.substr(i + 1, j - i - 1), ptr);
        i = j + 1;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

std::string Placeholders::lookup(const std::string& name, const std::string& ptr) {
  if (auto it = builtins_.find(name); it != builtins_.end()) return it->second;
  std::string key = name.rfind("paths.", 0) == 0 ? name.substr(6) : name;
  if (raw_.count(key)) return path(key);
  std::string known;
  for (const auto& [k, v] : builtins_) known += (known.empty() ? "{" : ", {") + k + "}";
  for (const auto& [k, v] : raw_) known += ", {" + k + "}";
  issues_.add(ptr, "unknown placeholder {" + name + "}", "use one of " + known + " or {paths.NAME}");
  return "{" + name + "}";
}

void resolve_all(nlohmann::ordered_json& j, const std::string& ptr, Placeholders& ph) {
  if (ptr == "/error_patterns") return;  // regexes: braces are quantifiers there
  if (j.is_string()) {
    j = ph.resolve(j.get<std::string>(), ptr);
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) resolve_all(it.value(), pointer_join(ptr, it.key()), ph);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) resolve_all(j[i], pointer_join(ptr, i), ph);
  }
}

}  // namespace cvs
