#include "cvs/config/json_reader.hpp"

#include <algorithm>

namespace cvs {

using Json = nlohmann::ordered_json;

std::string json_type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

std::string closest_key(const std::string& key, const std::vector<std::string>& allowed) {
  // Levenshtein distance; suggest when close enough to be a typo.
  std::string best;
  std::size_t best_d = 3;
  for (const auto& a : allowed) {
    std::vector<std::size_t> prev(a.size() + 1), cur(a.size() + 1);
    for (std::size_t j = 0; j <= a.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= key.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= a.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (key[i - 1] == a[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    if (prev[a.size()] < best_d) {
      best_d = prev[a.size()];
      best = a;
    }
  }
  return best;
}

void JsonReader::unknown_keys(const Json& obj, const std::string& ptr,
                              const std::vector<std::string>& allowed, const std::string& block) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!it.key().empty() && it.key()[0] == '_') continue;  // a comment
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    std::string hint = closest_key(it.key(), allowed);
    issues_.add(pointer_join(ptr, it.key()), "unknown key '" + it.key() + "' in " + block,
                hint.empty() ? "remove it, or prefix it with '_' to keep it as a comment"
                             : "did you mean '" + hint + "'? (prefix with '_' to keep it as a comment)");
  }
}

const JsonReader::Json* JsonReader::object(const Json& parent, const std::string& key,
                                           const std::string& ptr) {
  auto it = parent.find(key);
  if (it == parent.end()) return nullptr;
  if (!it->is_object()) {
    issues_.add(pointer_join(ptr, key), "'" + key + "' must be an object, found " + json_type_name(*it),
                "write it as { ... }");
    return nullptr;
  }
  return &*it;
}

void JsonReader::str(const Json& obj, const std::string& key, const std::string& ptr, std::string& out,
                     bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required)
      issues_.add(pointer_join(ptr, key), "required key '" + key + "' is missing",
                  "add \"" + key + "\": \"...\"");
    return;
  }
  if (!it->is_string()) {
    issues_.add(pointer_join(ptr, key), "'" + key + "' must be a string, found " + json_type_name(*it),
                "quote the value");
    return;
  }
  out = it->get<std::string>();
}

void JsonReader::boolean(const Json& obj, const std::string& key, const std::string& ptr, bool& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  if (!it->is_boolean()) {
    issues_.add(pointer_join(ptr, key),
                "'" + key + "' must be true or false, found " + json_type_name(*it) + " " + it->dump(),
                "write true or false without quotes");
    return;
  }
  out = it->get<bool>();
}

std::optional<long long> JsonReader::integer_value(const Json& obj, const std::string& key,
                                                   const std::string& ptr, long long min, bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required)
      issues_.add(pointer_join(ptr, key), "required key '" + key + "' is missing",
                  "add \"" + key + "\": <integer>");
    return std::nullopt;
  }
  if (!it->is_number_integer()) {
    issues_.add(pointer_join(ptr, key),
                "'" + key + "' must be an integer, found " + json_type_name(*it) + " " + it->dump(),
                "write a whole number without quotes");
    return std::nullopt;
  }
  long long v = it->get<long long>();
  if (v < min) {
    issues_.add(pointer_join(ptr, key),
                "'" + key + "' is " + std::to_string(v) + ", must be >= " + std::to_string(min),
                "set it to at least " + std::to_string(min));
    return std::nullopt;
  }
  return v;
}

void JsonReader::number(const Json& obj, const std::string& key, const std::string& ptr, double& out,
                        std::optional<double> min) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  if (!it->is_number()) {
    issues_.add(pointer_join(ptr, key),
                "'" + key + "' must be a number, found " + json_type_name(*it) + " " + it->dump(),
                "write a number without quotes");
    return;
  }
  double v = it->get<double>();
  if (min && v < *min) {
    issues_.add(pointer_join(ptr, key),
                "'" + key + "' is " + it->dump() + ", must be >= " + std::to_string(*min),
                "set a non-negative value");
    return;
  }
  out = v;
}

void JsonReader::str_list(const Json& obj, const std::string& key, const std::string& ptr,
                          std::vector<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  const std::string p = pointer_join(ptr, key);
  if (!it->is_array()) {
    issues_.add(p, "'" + key + "' must be a list of strings, found " + json_type_name(*it),
                "write it as [\"...\", ...]");
    return;
  }
  out.clear();
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& e = (*it)[i];
    if (!e.is_string()) {
      issues_.add(pointer_join(p, i), "list entry must be a string, found " + json_type_name(e),
                  "quote the value");
      continue;
    }
    out.push_back(e.get<std::string>());
  }
}

}  // namespace cvs
