// Placeholders of a config file: {user-id}, {cvs_root} and {NAME} / {paths.NAME} (a key of the
// paths block, itself resolved, cycles reported) in every string value; an unknown one is an issue
// at its pointer. The error_patterns block is left alone (braces are regex quantifiers there).
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
  Placeholders(std::string user, std::string cvs_root, std::map<std::string, std::string> raw_paths,
               IssueList& issues)
      : user_(std::move(user)), cvs_root_(std::move(cvs_root)), raw_(std::move(raw_paths)), issues_(issues) {}

  // The paths block's NAME, resolved.
  std::string path(const std::string& name);
  // One string with every placeholder resolved (`ptr`: where it stands, for issues).
  std::string resolve(const std::string& s, const std::string& ptr);

 private:
  std::string lookup(const std::string& name, const std::string& ptr);

  std::string user_, cvs_root_;
  std::map<std::string, std::string> raw_;
  std::map<std::string, std::string> done_;
  std::vector<std::string> stack_;
  std::set<std::string> reported_cycles_;
  IssueList& issues_;
};

// Every string under j (at ptr), in place.
void resolve_all(nlohmann::ordered_json& j, const std::string& ptr, Placeholders& ph);

}  // namespace cvs
