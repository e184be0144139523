#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "cvs/base/exit_codes.hpp"
#include "cvs/config/layout.hpp"

namespace cvs::cli {

namespace {

// Replaces this process with argv[0] (returns only when that fails).
int exec_program(const char* who, std::vector<std::string> owned) {
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::cerr << who << ": cannot execute " << owned[0] << "\n";
  return kExitInfra;  // the tool's own program is missing: no gate was decided
}

}  // namespace

std::filesystem::path suite_executable(const std::string& suite) {
  std::string looked;
  if (auto found = companion_program(suite, looked)) return *found;
  throw BadInput(suite + " not found (looked in " + looked +
                 "): build it with tools/setup, or reinstall the cvs-maxtext package");
}

// The suites `cvs run` reaches; jaxmaxtext_fleet is fleet mode (also `cvs fleet`).
bool is_suite(const std::string& name) {
  return name == "jaxmaxtext_single" || name == "jaxmaxtext_distributed" || name == "jaxmaxtext_fleet" ||
         name == "jaxmaxtext_certify";
}

// `cvs run SUITE [suite/gtest args...]` execs the suite: libexec/cvs-maxtext/SUITE of an install,
// build/suites/SUITE of the build tree.
int cmd_run(const Args& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: cvs run "
                 "jaxmaxtext_single|jaxmaxtext_distributed|jaxmaxtext_fleet|jaxmaxtext_certify [suite "
                 "options and gtest flags]\n"
                 "       (cvs run SUITE --help lists the suite's options)\n\n"
              << kExitCodeTable << "\n";
    return kExitOk;
  }
  if (args.empty() || !is_suite(args[0])) {
    std::cerr
        << "usage: cvs run jaxmaxtext_single|jaxmaxtext_distributed|jaxmaxtext_fleet|jaxmaxtext_certify "
           "[--config FILE] "
           "[--cluster FILE] [--output DIR] [--gtest_filter=...]\n";
    return kExitUsage;
  }
  std::vector<std::string> argv = {suite_executable(args[0]).string()};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  return exec_program("cvs run", std::move(argv));
}

namespace {

// `cvs <command> ARGS` that is `cvs run <suite> ARGS`.
int run_suite(const char* suite, const Args& args) {
  Args all = {suite};
  all.insert(all.end(), args.begin(), args.end());
  return cmd_run(all);
}

}  // namespace

// `cvs fleet ARGS` is `cvs run jaxmaxtext_fleet ARGS`.
int cmd_fleet(const Args& args) {
  return run_suite("jaxmaxtext_fleet", args);
}

// `cvs certify ARGS` is `cvs run jaxmaxtext_certify ARGS`.
int cmd_certify(const Args& args) {
  return run_suite("jaxmaxtext_certify", args);
}

}  // namespace cvs::cli

namespace cvs::cli {

// `cvs setup-venv [--venv DIR] [--python PY] [--wheels DIR] [--force]` runs the shipped setup-venv
// with the venv ({cvs_venv}) and MaxText lock this tool uses; the user's options come after and win.
int cmd_setup_venv(const Args& args) {
  std::string looked;
  const auto helper = companion_program("setup-venv", looked);
  if (!helper)
    throw BadInput("setup-venv not found (looked in " + looked + "): reinstall the cvs-maxtext package");
  std::vector<std::string> argv = {helper->string(), "--venv", cvs_venv().string(), "--lock",
                                   maxtext_lock().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return exec_program("cvs setup-venv", std::move(argv));
}

}  // namespace cvs::cli
