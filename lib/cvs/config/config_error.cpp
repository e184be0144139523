#include "cvs/config/config_error.hpp"

#include <algorithm>

#include "cvs/base/text.hpp"

namespace cvs {
namespace {
std::string summarize(const std::vector<ConfigIssue>& issues) {
  std::string out;
  for (const auto& i : issues) {
    if (!out.empty()) out += '\n';
    out += i.to_string();
  }
  return out;
}
}  // namespace

std::string ConfigIssue::to_string() const {
  std::string s = file + ": " + (pointer.empty() ? std::string("(document)") : pointer) + ": " + message;
  if (!fix.empty()) s += " (fix: " + fix + ")";
  return s;
}

ConfigError::ConfigError(std::vector<ConfigIssue> issues)
    : std::runtime_error(summarize(issues)), issues_(std::move(issues)) {}

ConfigError::ConfigError(std::string file, std::string pointer, std::string message, std::string fix)
    : ConfigError(std::vector<ConfigIssue>{
          {std::move(file), std::move(pointer), std::move(message), std::move(fix)}}) {}

void IssueList::add(std::string pointer, std::string message, std::string fix) {
  push_once({file_, std::move(pointer), std::move(message), std::move(fix)});
}

void IssueList::append(const ConfigError& e) {
  for (const auto& i : e.issues()) push_once(i);
}

// One key shared by several rules' subjects (two runs reading one maxtext_config.steps) is one
// problem for the user: the same words at the same place are listed once.
void IssueList::push_once(ConfigIssue issue) {
  const auto same = [&](const ConfigIssue& i) {
    return i.file == issue.file && i.pointer == issue.pointer && i.message == issue.message;
  };
  if (std::none_of(issues_.begin(), issues_.end(), same)) issues_.push_back(std::move(issue));
}

void IssueList::throw_if_any() const {
  if (!issues_.empty()) throw ConfigError(issues_);
}

std::string pointer_token(const std::string& key) {
  return escape_chars(key, {{'~', "~0"}, {'/', "~1"}});  // RFC 6901
}

std::string pointer_join(const std::string& parent, const std::string& key) {
  return parent + "/" + pointer_token(key);
}

std::string pointer_join(const std::string& parent, std::size_t index) {
  return parent + "/" + std::to_string(index);
}

}  // namespace cvs
