// JsonReader: typed access to the keys of a user's JSON file (config, cluster, threshold) that
// records a ConfigIssue (file, JSON pointer, what is wrong with the bad value, the fix) instead of
// throwing, so that every problem of a file is reported at once; an unknown key gets a "did you
// mean" from the keys its block allows. The one reader those files share.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cvs/config/config_error.hpp"

namespace cvs {

// "null", "a boolean", "a string", "an array", "an object", "a number"
std::string json_type_name(const nlohmann::ordered_json& j);
// The allowed key within two edits of `key` ("" when none is that close).
std::string closest_key(const std::string& key, const std::vector<std::string>& allowed);

class JsonReader {
 public:
  using Json = nlohmann::ordered_json;
  explicit JsonReader(IssueList& issues) : issues_(issues) {}

  // Every key of obj (at ptr) not in `allowed` and not a '_' comment: "unknown key 'k' in <block>".
  void unknown_keys(const Json& obj, const std::string& ptr, const std::vector<std::string>& allowed,
                    const std::string& block);
  // The object at key (nullptr when absent or, with an issue, not an object).
  const Json* object(const Json& parent, const std::string& key, const std::string& ptr);
  // Each reader leaves `out` alone when the key is absent or has the wrong type (an issue then).
  void str(const Json& obj, const std::string& key, const std::string& ptr, std::string& out,
           bool required = false);
  void boolean(const Json& obj, const std::string& key, const std::string& ptr, bool& out);
  template <typename Int>
  void integer(const Json& obj, const std::string& key, const std::string& ptr, Int& out, long long min,
               bool required = false) {
    if (auto v = integer_value(obj, key, ptr, min, required)) out = static_cast<Int>(*v);
  }
  void number(const Json& obj, const std::string& key, const std::string& ptr, double& out,
              std::optional<double> min = std::nullopt);
  void str_list(const Json& obj, const std::string& key, const std::string& ptr,
                std::vector<std::string>& out);
  IssueList& issues() { return issues_; }

 private:
  std::optional<long long> integer_value(const Json& obj, const std::string& key, const std::string& ptr,
                                         long long min, bool required);
  IssueList& issues_;
};

}  // namespace cvs
