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

// The suites `cvs run` reaches; jaxmaxtext_fleet is fleet mode (also `cvs fleet`).
bool is_suite(const std::string& name) {
  return name == "jaxmaxtext_single" || name == "jaxmaxtext_distributed" || name == "jaxmaxtext_fleet" ||
         name == "jaxmaxtext_certify";
}

// `cvs run SUITE [suite/gtest args...]` execs build/suites/SUITE (next to this binary's build tree).
int cmd_run(const Args& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: cvs run "
                 "jaxmaxtext_single|jaxmaxtext_distributed|jaxmaxtext_fleet|jaxmaxtext_certify [suite "
                 "options and gtest flags]\n"
                 "       (cvs run SUITE --help lists the suite's options)\n";
    return kExitOk;
  }
  if (args.empty() || !is_suite(args[0])) {
    std::cerr
        << "usage: cvs run jaxmaxtext_single|jaxmaxtext_distributed|jaxmaxtext_fleet|jaxmaxtext_certify "
           "[--config FILE] "
           "[--cluster FILE] [--output DIR] [--gtest_filter=...]\n";
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

// `cvs fleet ARGS` is `cvs run jaxmaxtext_fleet ARGS`.
int cmd_fleet(const Args& args) {
  Args all = {"jaxmaxtext_fleet"};
  all.insert(all.end(), args.begin(), args.end());
  return cmd_run(all);
}

}  // namespace cvs::cli

namespace cvs::cli {

// `cvs certify ARGS` is `cvs run jaxmaxtext_certify ARGS`.
int cmd_certify(const Args& args) {
  Args all = {"jaxmaxtext_certify"};
  all.insert(all.end(), args.begin(), args.end());
  return cmd_run(all);
}

}  // namespace cvs::cli
