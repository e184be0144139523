#include "suite_main.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cvs/config_error.hpp"
#include "cvs/environment.hpp"
#include "cvs/junit_errors.hpp"
#include "cvs/listener.hpp"
#include "cvs/session.hpp"

namespace cvs::suites {
namespace {

constexpr const char* kHelp = R"(suite options (besides gtest's --gtest_filter, --gtest_output=xml:FILE, ...):
  --config FILE           suite config (default: configs/cpu_jaxmaxtext_tiny_single.json for jaxmaxtext_single)
  --cluster FILE          cluster file (default: one local node)
  --output DIR            report folder (default: cvs-results/<suite>-<UTC time>; never reused)
  --baseline FILE         an earlier results.json: the report gets a comparison section
  --baseline-tolerance-pct P   regression tolerance for --baseline (default 5)
  --thresholds FILE       threshold file to gate with instead of the config's threshold_json (default:
                          this machine's calibration from `cvs calibrate` when there is one, else threshold_json)
  --strict-provenance     fail setup when the run's provenance differs from its calibration's
  --quiet                 no progress lines while training
  --poll-interval-s S     seconds between polls of the node logs (default 5)
  --startup-budget-s S    poll budget = startup + steps x per-step (default 1800)
  --step-budget-s S       (default 120)
)";

// 0 every gate passed, 1 a gate failed (FAIL, or INCONCLUSIVE that fails), 3 no gate failed but
// the infrastructure kept a stage from deciding (ERROR); gtest's own code when no results.json.
int exit_code(const std::filesystem::path& results, int gtest_rc) {
  std::ifstream in(results);
  if (!in) return gtest_rc;
  try {
    const auto status = nlohmann::json::parse(in).value("status", std::string());
    if (status == "PASS") return 0;
    if (status == "ERROR") return 3;
    return 1;
  } catch (const std::exception&) {
    return gtest_rc;
  }
}

}  // namespace

int run_suite(int argc, char** argv, const char* suite_name, Mode mode) {
  spdlog::set_pattern("[%H:%M:%S] [%^%l%$] %v");
  fixtures::SuiteOptions opts;
  opts.suite_name = suite_name;
  opts.expected_mode = mode;
  if (mode == Mode::Single)
    opts.config = std::string(CVS_SOURCE_DIR) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  std::vector<char*> rest = {argv[0]};
  bool listing = false, has_output_flag = false;
  std::string user_xml;  // --gtest_output=xml:FILE
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (auto eq = a.find('='); eq != std::string::npos) return a.substr(eq + 1);
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      auto is = [&](const char* flag) { return a == flag || a.rfind(std::string(flag) + "=", 0) == 0; };
      if (is("--config"))
        opts.config = value();
      else if (is("--cluster"))
        opts.cluster = value();
      else if (is("--output"))
        opts.output = value();
      else if (is("--baseline"))
        opts.baseline = value();
      else if (is("--baseline-tolerance-pct"))
        opts.baseline_tolerance_pct = std::stod(value());
      else if (is("--thresholds"))
        opts.thresholds = value();
      else if (a == "--strict-provenance")
        opts.strict_provenance = true;
      else if (a == "--quiet")
        opts.quiet = true;
      else if (is("--poll-interval-s"))
        opts.policy.interval = std::chrono::milliseconds(static_cast<long>(std::stod(value()) * 1000));
      else if (is("--startup-budget-s"))
        opts.policy.startup_s = std::stod(value());
      else if (is("--step-budget-s"))
        opts.policy.per_step_s = std::stod(value());
      else if (a == "--help" || a == "-h") {
        std::fputs(kHelp, stdout);
        rest.push_back(argv[i]);
      } else {
        listing |= a == "--gtest_list_tests";
        if (a.rfind("--gtest_output=xml:", 0) == 0 && a.back() != '/') user_xml = a.substr(19);
        has_output_flag |= a.rfind("--gtest_output", 0) == 0;
        rest.push_back(argv[i]);
      }
    }
    if (opts.config.empty())
      throw ConfigError(
          "(command line)", "", std::string(suite_name) + " needs --config FILE",
          "pass a distributed config, e.g. --config configs/cpu_jaxmaxtext_tiny_distributed.json");
    if (listing && opts.output.empty())
      opts.output = std::filesystem::temp_directory_path() / "cvs-list-tests";
    fixtures::Session::get().init(opts);
  } catch (const ConfigError& e) {
    for (const auto& i : e.issues()) std::cerr << "error: " << i.to_string() << "\n";
    std::cerr << e.issues().size() << " error(s); nothing was run\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << suite_name << ": " << e.what() << "\n" << kHelp;
    return 2;
  }
  // JUnit XML for Jenkins next to the report unless the caller chose a place.
  std::string xml = "--gtest_output=xml:" + (fixtures::Session::get().opts.output / "junit.xml").string();
  if (!has_output_flag && !listing) rest.push_back(xml.data());
  int n = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  ::testing::InitGoogleTest(&n, rest.data());
  ::testing::UnitTest::GetInstance()->listeners().Append(new report::ReportListener);
  ::testing::AddGlobalTestEnvironment(new fixtures::ClusterEnvironment);
  const int rc = RUN_ALL_TESTS();
  if (listing) return rc;
  // gtest writes only <failure>: the stages that ended ERROR get <error> in the JUnit file.
  std::filesystem::path junit = fixtures::Session::get().opts.output / "junit.xml";
  if (has_output_flag) junit = user_xml;
  if (!junit.empty() && !report::rewrite_junit_errors(junit))
    spdlog::warn("could not mark the ERROR stages in {}", junit.string());
  std::fprintf(stderr, "cvs: junit   %s\n", junit.c_str());
  return exit_code(fixtures::Session::get().opts.output / "results.json", rc);
}

}  // namespace cvs::suites
