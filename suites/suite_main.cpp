#include "suite_main.hpp"
#include "cvs/base/exit_codes.hpp"

#include <gtest/gtest.h>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cvs/base/cli_checks.hpp"
#include "cvs/base/text.hpp"
#include "cvs/config/config.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/environment.hpp"
#include "cvs/listener.hpp"
#include "cvs/reporters.hpp"
#include "cvs/session.hpp"
#include "cvs/session_results.hpp"

namespace cvs::suites {
namespace {

// The suite's own options (CLI11); every other argument (gtest's --gtest_filter=..., --gtest_output=...)
// passes through to gtest in its order.
struct ParsedArgs {
  std::vector<std::string> gtest;
  bool help = false;
  bool check_only = false;  // --check-options: the arguments parsed, nothing set up or run
};

// Only gtest's own --gtest_* flags pass through: anything else the suite does not know is a typo
// that would otherwise run the whole job (gtest ignores what it does not know).
void require_known(const std::vector<std::string>& extras, const CLI::App& app) {
  std::vector<std::string> known;
  for (const auto* o : app.get_options())
    for (const auto& n : o->get_lnames()) known.push_back("--" + n);
  for (const auto& a : extras) {
    if (a.rfind("--gtest_", 0) == 0) continue;
    const std::string name = a.substr(0, a.find('='));
    const auto near = nearest_word(name, known);
    throw CLI::ExtrasError(
        "unknown option '" + a + "'" + (near.empty() ? "" : " (did you mean " + near + "?)") +
            ": nothing was run; only the suite's options and gtest's --gtest_* flags are read",
        CLI::ExitCodes::ExtrasError);
  }
}

ParsedArgs parse_suite_options(CLI::App& app, fixtures::SuiteOptions& opts, report::ReporterOptions& outputs,
                               int argc, char** argv) {
  ParsedArgs out;
  std::string config, cluster, output, baseline, thresholds;
  double poll_s = 0;
  app.set_help_flag();  // --help reaches gtest too, which lists its own flags after ours
  app.allow_extras();
  app.add_flag("-h,--help", out.help, "this help, then gtest's");
  app.add_flag("--check-options", out.check_only,
               "parse the arguments and exit (0, or 2 naming what is wrong): nothing is set up or run");
  app.add_option("--config", config,
                 "suite config (jaxmaxtext_single: configs/cpu_jaxmaxtext_tiny_single.json)");
  app.add_option("--cluster", cluster, "cluster file (default: one local node)");
  app.add_option("--output", output, "report folder (default: cvs-results/<suite>-<UTC time>; never reused)");
  app.add_option("--baseline", baseline, "an earlier results.json: the report gets a comparison section");
  app.add_option("--baseline-tolerance-pct", opts.baseline_tolerance_pct,
                 "regression tolerance for --baseline")
      ->check(cvs::cli_checks::kNonNegative);
  app.add_option("--thresholds", thresholds,
                 "threshold file instead of this machine's calibration (cvs calibrate) or threshold_json");
  app.add_flag("--strict-provenance", opts.strict_provenance,
               "fail setup when the run's provenance differs from its calibration's");
  app.add_flag("--quiet", opts.quiet, "no progress lines while training");
  app.add_option("--run-tag", opts.run_tag, "appended to every run name (jaxmaxtext_fleet: the node's name)");
  app.add_option("--warm-scope", opts.warm_scope,
                 "the warm trainers are this scope's (cvs certify's: one import a node a certification), not "
                 "the session's: started unless running, kept at teardown")
      ->check(CLI::Validator(
          [](const std::string& v) {
            const bool ok = !v.empty() && v.size() <= 32 && std::all_of(v.begin(), v.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
            });
            return ok ? std::string() : "letters, digits and '-', at most 32";
          },
          "SCOPE"));
  app.add_option("--poll-interval-s", poll_s, "seconds between polls of the node logs (default 5)")
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--startup-budget-s", opts.policy.startup_s,
                 "poll budget = startup + steps x per-step (1800)")
      ->check(cvs::cli_checks::positive(false));
  app.add_option("--step-budget-s", opts.policy.per_step_s, "seconds per step of the poll budget (120)")
      ->check(cvs::cli_checks::positive(false));
  app.add_option("--history", opts.history,
                 "the results store the session is recorded in: a SQLite file, postgresql://..., or none "
                 "(default: $CVS_HISTORY, else ~/.local/state/cvs-maxtext/history.sqlite)");
  report::add_output_options(app, outputs);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());
  app.parse(args);                                             // CLI::ParseError: bad input
  if (!config.empty()) opts.config = config_argument(config);  // a path, or a shipped config's name
  opts.cluster = cluster;
  opts.output = output;
  opts.baseline = baseline;
  opts.thresholds = thresholds;
  if (poll_s > 0) opts.policy.interval = std::chrono::milliseconds(static_cast<long>(poll_s * 1000));
  out.gtest = app.remaining();
  if (!out.help) require_known(out.gtest, app);
  return out;
}

// 0 every gate passed, 1 a gate failed (FAIL, or INCONCLUSIVE that fails), 3 no gate failed but
// the infrastructure kept a stage from deciding (ERROR); gtest's own code when nothing was written.
int exit_code(std::optional<Outcome> status, int gtest_rc) {
  if (!status) return gtest_rc;
  if (*status == Outcome::Pass) return kExitOk;
  if (*status == Outcome::Error) return kExitInfra;
  return kExitFail;
}

// gtest's flags as they pass on, whether they list the tests, and where the JUnit file goes: the
// suite writes it from its typed stages (ERROR as <error>, real setup time, the suite's own names),
// so gtest's XML is never written, only its json: output passes on.
void split_gtest_args(const std::vector<std::string>& given, const char* suite_name,
                      std::vector<std::string>& gtest_args, bool& listing, std::string& user_xml) {
  for (const auto& a : given) {
    listing |= a == "--gtest_list_tests";
    if (a.rfind("--gtest_output=xml", 0) == 0) {
      user_xml = a.size() > 19 ? a.substr(19) : "";
      if (user_xml.empty() || user_xml.back() == '/') user_xml += std::string(suite_name) + ".xml";
      continue;
    }
    gtest_args.push_back(a);
  }
}

}  // namespace

int run_suite(int argc, char** argv, const char* suite_name, Mode mode) {
  spdlog::set_pattern("[%H:%M:%S] [%^%l%$] %v");
  fixtures::SuiteOptions opts;
  opts.suite_name = suite_name;
  opts.expected_mode = mode;
  if (mode == Mode::Single) opts.config = cvs_root() / "configs" / "cpu_jaxmaxtext_tiny_single.json";
  std::vector<std::string> gtest_args;
  bool listing = false;
  std::string user_xml;  // --gtest_output=xml:FILE (or xml:DIR/): where the JUnit file goes
  CLI::App app{std::string(suite_name) + ": the jaxmaxtext suite's options, besides gtest's", suite_name};
  app.footer(kExitCodeTable);
  report::ReporterOptions ro;  // its outputs' options are parsed with the suite's
  try {
    auto parsed = parse_suite_options(app, opts, ro, argc, argv);
    if (parsed.help) {  // nothing is set up or run
      std::cout << app.help()
                << "\ngtest's flags pass through in their order, e.g. --gtest_filter=PATTERN "
                   "(--gtest_filter=-*smoke*, "
                   "--gtest_filter=*FP8*), --gtest_list_tests, --gtest_output=xml:FILE (default: "
                   "<output>/junit.xml), "
                   "--gtest_repeat=N.\n";
      return 0;
    }
    if (parsed.check_only) return 0;
    split_gtest_args(parsed.gtest, suite_name, gtest_args, listing, user_xml);
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
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::cerr << suite_name << ": " << e.what() << "\n" << app.help();
    return kExitUsage;
  } catch (const std::exception& e) {  // not bad input the suite could name: the tool failed
    std::cerr << suite_name << ": " << e.what() << "\n";
    return kExitInfra;
  }
  std::vector<char*> rest = {argv[0]};
  for (auto& a : gtest_args) rest.push_back(a.data());
  int n = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  ::testing::InitGoogleTest(&n, rest.data());
  const auto& so = fixtures::Session::get().opts();
  ro.history = so.history;
  ro.record_history = !listing;  // --gtest_list_tests runs nothing: nothing to remember
  // JUnit XML for Jenkins next to the report unless the caller chose a place.
  if (!listing) ro.junit = user_xml.empty() ? (so.output / "junit.xml").string() : user_xml;
  auto* listener = new report::ReportListener(
      [](std::vector<StageRecord> stages) {
        const auto& s = fixtures::Session::get();
        if (s.opts().output.empty()) return std::optional<report::ReportTarget>();
        return std::optional(
            report::ReportTarget{s.opts().output, fixtures::session_results(s, std::move(stages))});
      },
      ro);
  ::testing::UnitTest::GetInstance()->listeners().Append(listener);  // gtest owns it
  ::testing::AddGlobalTestEnvironment(new fixtures::ClusterEnvironment);
  const int rc = RUN_ALL_TESTS();
  if (listing) return rc;
  return exit_code(listener->status(), rc);
}

}  // namespace cvs::suites
