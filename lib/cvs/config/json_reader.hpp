// JsonReader: typed access to the keys of one object of a user's JSON file (config, cluster,
// threshold) that records a ConfigIssue (file, JSON pointer, what is wrong with the bad value, the
// fix) instead of throwing, so that every problem of a file is reported at once. The one reader
// those files share.
//
// Each key is named once, by the read that takes it: every read records its key as known, and
// finish() reports the object's other keys as unknown, with a "did you mean" from the known ones.
// A block of a file is a struct with its own `void from_json(JsonReader&, Block&)` (declared in
// namespace cvs beside the struct), read by `block(key, out)`.
#pragma once

#include <climits>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/config/config_error.hpp"

namespace cvs {

// "null", "a boolean", "a string", "an array", "an object", "a number"
std::string json_type_name(const nlohmann::ordered_json& j);
// The allowed key within two edits of `key` ("" when none is that close).
std::string closest_key(const std::string& key, const std::vector<std::string>& allowed);
// "a, b or c"
std::string join_or(const std::vector<std::string>& words);

class JsonReader {
 public:
  using Json = nlohmann::ordered_json;
  // The keys of obj, found at ptr; `block` names the object in messages ("" = from the pointer:
  // "/container/runtime" -> "container.runtime").
  JsonReader(IssueList& issues, const Json& obj, std::string ptr, std::string block = "");
  JsonReader(const JsonReader&) = delete;
  JsonReader& operator=(const JsonReader&) = delete;

  // The value at key (nullptr when absent); the key becomes known. For values no reader below fits.
  const Json* find(const std::string& key);
  // Keys this object may hold that another path reads (or that mean nothing in this case).
  void allow(const std::vector<std::string>& keys);
  // The JSON pointer of key in this object.
  std::string at(const std::string& key) const;
  IssueList& issues() { return issues_; }

  // Each reader leaves `out` alone when the key is absent or its value is wrong (an issue then).
  void str(const std::string& key, std::string& out, bool required = false);
  void boolean(const std::string& key, bool& out);
  template <typename Int>
  void integer(const std::string& key, Int& out, long long min, bool required = false,
               long long max = LLONG_MAX) {
    if (auto v = integer_value(key, min, max, required)) out = static_cast<Int>(*v);
  }
  void number(const std::string& key, double& out, std::optional<double> min = std::nullopt);
  void str_list(const std::string& key, std::vector<std::string>& out);
  // Several optional keys of one kind, in order, each into its field: a block's plain strings, or
  // its string lists.
  template <typename T>
  using Fields = std::initializer_list<std::pair<const char*, std::reference_wrapper<T>>>;
  void strs(Fields<std::string> fields) {
    for (const auto& [key, out] : fields) str(key, out.get());
  }
  void str_lists(Fields<std::vector<std::string>> fields) {
    for (const auto& [key, out] : fields) str_list(key, out.get());
  }
  // A string that must be one of `words`; true when one was read.
  bool choice(const std::string& key, std::string& out, const std::vector<std::string>& words,
              const std::string& fix);
  // The same, for an enum: `words` is its word table.
  template <typename Enum>
  void choice(const std::string& key, Enum& out, const std::vector<std::pair<std::string, Enum>>& words,
              const std::string& fix) {
    std::vector<std::string> names;
    for (const auto& w : words) names.push_back(w.first);
    std::string word;
    if (!choice(key, word, names, fix)) return;
    for (const auto& w : words)
      if (w.first == word) out = w.second;
  }
  // The object at key (nullptr when absent or, with an issue, not an object).
  const Json* object(const std::string& key);
  // The object at key, its keys read by read(JsonReader&); false when absent or not an object.
  template <typename Read>
  bool nested(const std::string& key, Read&& read, const std::string& block = "") {
    const Json* o = object(key);
    if (!o) return false;
    JsonReader sub(issues_, *o, at(key), block);
    read(sub);
    sub.finish();
    return true;
  }
  // The block at key, read by its from_json(JsonReader&, Block&).
  template <typename Block>
  bool block(const std::string& key, Block& out) {
    return nested(key, [&out](JsonReader& r) { from_json(r, out); });
  }
  // Every key of the object that no read named and allow() did not list, and that is not a '_'
  // comment: "unknown key 'k' in <block>", with "did you mean" when one is close.
  void finish();

 private:
  std::optional<long long> integer_value(const std::string& key, long long min, long long max, bool required);
  // The value at key when `is` says its type is right; nullptr when absent, or wrong (an issue:
  // "'key' must be <must_be>, found <its type>", with its value where `says_value`).
  const Json* typed(const std::string& key, bool (*is)(const Json&), const char* must_be, const char* fix,
                    bool says_value);
  // True when key is absent (an issue when `required`: "add \"key\": <placeholder>").
  bool missing(const std::string& key, bool required, const std::string& placeholder);
  IssueList& issues_;
  const Json& obj_;
  std::string ptr_;
  std::string block_;
  std::vector<std::string> known_;
};

}  // namespace cvs
