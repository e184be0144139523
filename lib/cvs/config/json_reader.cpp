#include "cvs/config/json_reader.hpp"

#include "cvs/base/format.hpp"

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

std::string join_or(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : (i + 1 == words.size() ? " or " : ", ")) + words[i];
  return out;
}

namespace {

// "/container/runtime/args" -> "container.runtime.args"
std::string block_from_pointer(const std::string& ptr) {
  std::string out = ptr.empty() ? "the document" : ptr.substr(1);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

}  // namespace

JsonReader::JsonReader(IssueList& issues, const Json& obj, std::string ptr, std::string block)
    : issues_(issues), obj_(obj), ptr_(std::move(ptr)), block_(std::move(block)) {
  if (block_.empty()) block_ = block_from_pointer(ptr_);
}

const JsonReader::Json* JsonReader::find(const std::string& key) {
  known_.push_back(key);
  auto it = obj_.find(key);
  return it == obj_.end() ? nullptr : &*it;
}

void JsonReader::allow(const std::vector<std::string>& keys) {
  known_.insert(known_.end(), keys.begin(), keys.end());
}

std::string JsonReader::at(const std::string& key) const {
  return pointer_join(ptr_, key);
}

void JsonReader::finish() {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (!it.key().empty() && it.key()[0] == '_') continue;  // a comment
    if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
    std::string hint = closest_key(it.key(), known_);
    issues_.add(at(it.key()), "unknown key '" + it.key() + "' in " + block_,
                hint.empty() ? "remove it, or prefix it with '_' to keep it as a comment"
                             : "did you mean '" + hint + "'? (prefix with '_' to keep it as a comment)");
  }
}

const JsonReader::Json* JsonReader::object(const std::string& key) {
  const Json* v = find(key);
  if (!v || v->is_object()) return v;
  issues_.add(at(key), "'" + key + "' must be an object, found " + json_type_name(*v), "write it as { ... }");
  return nullptr;
}

void JsonReader::str(const std::string& key, std::string& out, bool required) {
  const Json* v = find(key);
  if (!v) {
    if (required)
      issues_.add(at(key), "required key '" + key + "' is missing", "add \"" + key + "\": \"...\"");
    return;
  }
  if (!v->is_string()) {
    issues_.add(at(key), "'" + key + "' must be a string, found " + json_type_name(*v), "quote the value");
    return;
  }
  out = v->get<std::string>();
}

bool JsonReader::choice(const std::string& key, std::string& out, const std::vector<std::string>& words,
                        const std::string& fix) {
  const Json* v = find(key);
  if (!v) return false;
  std::string word;
  str(key, word);  // a value that is not a string: its issue
  if (!v->is_string()) return false;
  if (std::find(words.begin(), words.end(), word) == words.end()) {
    issues_.add(at(key), key + " '" + word + "' is not " + join_or(words), fix);
    return false;
  }
  out = word;
  return true;
}

void JsonReader::boolean(const std::string& key, bool& out) {
  const Json* v = find(key);
  if (!v) return;
  if (!v->is_boolean()) {
    issues_.add(at(key), "'" + key + "' must be true or false, found " + json_type_name(*v) + " " + v->dump(),
                "write true or false without quotes");
    return;
  }
  out = v->get<bool>();
}

std::optional<long long> JsonReader::integer_value(const std::string& key, long long min, long long max,
                                                   bool required) {
  const Json* v = find(key);
  if (!v) {
    if (required)
      issues_.add(at(key), "required key '" + key + "' is missing", "add \"" + key + "\": <integer>");
    return std::nullopt;
  }
  if (!v->is_number_integer()) {
    issues_.add(at(key), "'" + key + "' must be an integer, found " + json_type_name(*v) + " " + v->dump(),
                "write a whole number without quotes");
    return std::nullopt;
  }
  const long long n = v->get<long long>();
  if (n < min || n > max) {
    const bool below = n < min;
    issues_.add(
        at(key),
        "'" + key + "' is " + std::to_string(n) + ", must be " + (below ? ">= " : "<= ") +
            std::to_string(below ? min : max),
        below ? "set it to at least " + std::to_string(min) : "set it to at most " + std::to_string(max));
    return std::nullopt;
  }
  return n;
}

void JsonReader::number(const std::string& key, double& out, std::optional<double> min) {
  const Json* v = find(key);
  if (!v) return;
  if (!v->is_number()) {
    issues_.add(at(key), "'" + key + "' must be a number, found " + json_type_name(*v) + " " + v->dump(),
                "write a number without quotes");
    return;
  }
  const double d = v->get<double>();
  if (min && d < *min) {
    issues_.add(at(key), "'" + key + "' is " + v->dump() + ", must be >= " + short_number(*min),
                "set it to at least " + short_number(*min));
    return;
  }
  out = d;
}

void JsonReader::str_list(const std::string& key, std::vector<std::string>& out) {
  const Json* v = find(key);
  if (!v) return;
  const std::string p = at(key);
  if (!v->is_array()) {
    issues_.add(p, "'" + key + "' must be a list of strings, found " + json_type_name(*v),
                "write it as [\"...\", ...]");
    return;
  }
  out.clear();
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    if (!e.is_string()) {
      issues_.add(pointer_join(p, i), "list entry must be a string, found " + json_type_name(e),
                  "quote the value");
      continue;
    }
    out.push_back(e.get<std::string>());
  }
}

}  // namespace cvs
