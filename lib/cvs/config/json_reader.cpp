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

const JsonReader::Json* JsonReader::typed(const std::string& key, bool (*is)(const Json&),
                                          const char* must_be, const char* fix, bool says_value) {
  const Json* v = find(key);
  if (!v || is(*v)) return v;
  issues_.add(at(key),
              "'" + key + "' must be " + must_be + ", found " + json_type_name(*v) +
                  (says_value ? " " + v->dump() : ""),
              fix);
  return nullptr;
}

bool JsonReader::missing(const std::string& key, bool required, const std::string& placeholder) {
  if (find(key)) return false;
  if (required)
    issues_.add(at(key), "required key '" + key + "' is missing", "add \"" + key + "\": " + placeholder);
  return true;
}

const JsonReader::Json* JsonReader::object(const std::string& key) {
  return typed(
      key, [](const Json& v) { return v.is_object(); }, "an object", "write it as { ... }", false);
}

void JsonReader::str(const std::string& key, std::string& out, bool required) {
  if (missing(key, required, "\"...\"")) return;
  if (const Json* v = typed(
          key, [](const Json& j) { return j.is_string(); }, "a string", "quote the value", false))
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
  if (const Json* v = typed(
          key, [](const Json& j) { return j.is_boolean(); }, "true or false",
          "write true or false without quotes", true))
    out = v->get<bool>();
}

std::optional<long long> JsonReader::integer_value(const std::string& key, long long min, long long max,
                                                   bool required) {
  if (missing(key, required, "<integer>")) return std::nullopt;
  const Json* v = typed(
      key, [](const Json& j) { return j.is_number_integer(); }, "an integer",
      "write a whole number without quotes", true);
  if (!v) return std::nullopt;
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
  const Json* v = typed(
      key, [](const Json& j) { return j.is_number(); }, "a number", "write a number without quotes", true);
  if (!v) return;
  const double d = v->get<double>();
  if (min && d < *min) {
    issues_.add(at(key), "'" + key + "' is " + v->dump() + ", must be >= " + short_number(*min),
                "set it to at least " + short_number(*min));
    return;
  }
  out = d;
}

void JsonReader::str_list(const std::string& key, std::vector<std::string>& out) {
  const Json* v = typed(
      key, [](const Json& j) { return j.is_array(); }, "a list of strings", "write it as [\"...\", ...]",
      false);
  if (!v) return;
  const std::string p = at(key);
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
