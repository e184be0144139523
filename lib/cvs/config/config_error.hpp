// ConfigError: the one exception type for bad user input (config, threshold and cluster files).
// Each issue names the file, the JSON pointer of the offending key, what is wrong and the fix.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cvs {

struct ConfigIssue {
  std::string file;     // path of the file the key lives in
  std::string pointer;  // RFC 6901 JSON pointer, "" for the whole document
  std::string message;  // what is wrong, with the bad value
  std::string fix;      // one line: what to do about it

  // "file: /pointer: message (fix: ...)"
  std::string to_string() const;
};

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<ConfigIssue> issues);
  ConfigError(std::string file, std::string pointer, std::string message, std::string fix);

  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::vector<ConfigIssue> issues_;
};

// Collects every problem of a file so that all of them are reported together.
class IssueList {
 public:
  explicit IssueList(std::string file) : file_(std::move(file)) {}

  void add(std::string pointer, std::string message, std::string fix);
  void append(const ConfigError& e);
  bool empty() const { return issues_.empty(); }
  const std::string& file() const { return file_; }
  const std::vector<ConfigIssue>& issues() const { return issues_; }
  // Throws ConfigError holding every collected issue when there is at least one.
  void throw_if_any() const;

 private:
  void push_once(ConfigIssue issue);

  std::string file_;
  std::vector<ConfigIssue> issues_;
};

// RFC 6901: escape one reference token ("~" -> "~0", "/" -> "~1").
std::string pointer_token(const std::string& key);
// parent + "/" + escaped(key)
std::string pointer_join(const std::string& parent, const std::string& key);
std::string pointer_join(const std::string& parent, std::size_t index);

}  // namespace cvs
