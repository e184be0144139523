#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"

namespace cvs::cli {

std::filesystem::path suite_executable(const std::string& suite) {
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  return self.parent_path().parent_path().parent_path() / "suites" / suite;
}

// `cvs run SUITE [suite/gtest args...]` execs build/suites/SUITE (next to this binary's build tree).
int cmd_run(const Args& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: cvs run jaxmaxtext_single|jaxmaxtext_distributed [suite options and gtest flags]\n"
                 "       (cvs run SUITE --help lists the suite's options)\n";
    return kExitOk;
  }
  if (args.empty() || (args[0] != "jaxmaxtext_single" && args[0] != "jaxmaxtext_distributed")) {
    std::cerr << "usage: cvs run jaxmaxtext_single|jaxmaxtext_distributed [--config FILE] [--cluster FILE] "
                 "[--output DIR] [--gtest_filter=...]\n";
    return kExitUsage;
  }
  const auto suite = suite_executable(args[0]);
  if (!std::filesystem::exists(suite)) {
    std::cerr << "cvs run: " << suite << " not found; build it with tools/setup (or cmake --build build)\n";
    return kExitUsage;
  }
  std::vector<std::string> owned = {suite.string()};
  owned.insert(owned.end(), args.begin() + 1, args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::cerr << "cvs run: cannot execute " << suite << "\n";
  return kExitFail;
}

}  // namespace cvs::cli
