// Placeholders of a config file: the built-ins {user-id}, {cvs_root} and {cvs_venv} (layout.hpp),
// and {NAME} / {paths.NAME} (a key of the paths block, itself resolved, cycles reported) in every string
// value; an unknown one is an issue at its pointer. The error_patterns block is left alone (braces are regex
// quantifiers there).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cvs/config/config_error.hpp"

namespace cvs {

class Placeholders {
 public:
  // builtins: name (without braces) -> value, e.g. {"user-id", "alice"}.
  Placeholders(std::map<std::string, std::string> builtins, std::map<std::string, std::string> raw_paths,
               IssueList& issues)
      : builtins_(std::move(builtins)), raw_(std::move(raw_paths)), issues_(issues) {}

  // The paths block's NAME, resolved.
  std::string path(const std::string& name);
  // One string with every placeholder resolved (`ptr`: where it stands, for issues).
  std::string resolve(const std::string& s, const std::string& ptr);

 private:
  std::string lookup(const std::string& name, const std::string& ptr);

  std::map<std::string, std::string> builtins_;
  std::map<std::string, std::string> raw_;
  std::map<std::string, std::string> done_;
  std::vector<std::string> stack_;
  std::set<std::string> reported_cycles_;
  IssueList& issues_;
};

// Every string under j (at ptr), in place.
void resolve_all(nlohmann::ordered_json& j, const std::string& ptr, Placeholders& ph);

}  // namespace cvs
