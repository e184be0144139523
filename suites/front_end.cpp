#include "front_end.hpp"
#include "cvs/base/exit_codes.hpp"

#include <iostream>

#include "cvs/base/cli_checks.hpp"
#include "cvs/config/config_error.hpp"

namespace cvs::fleet {

void add_policy_options(CLI::App& app, FleetPolicy& policy, std::size_t& max_parallel,
                        const char* parallel_what) {
  app.add_option("--max-parallel", max_parallel, parallel_what)->check(cvs::cli_checks::positive(true));
  app.add_option("--max-z", policy.max_z, "modified z-score beyond which a node is an outlier (3.5)")
      ->check(cvs::cli_checks::positive(false));
  app.add_option_function<double>(
         "--min-deviation-pct", [&policy](double pct) { policy.min_deviation = pct / 100; },
         "and at least this far from the fleet's median, in % (10)")
      ->check(cvs::cli_checks::kNonNegative);
  app.add_option("--min-fleet", policy.min_fleet, "passing runs needed to score the fleet (3)")
      ->check(CLI::Range(2, 1 << 20));
}

void add_report_options(CLI::App& app, report::ReporterOptions& reports, const char* what) {
  app.add_option("--history", reports.history,
                 std::string("the results store the ") + what +
                     " (and every suite run's session) is recorded in (none: off)");
  report::add_output_options(app, reports);
  reports.session_files = false;  // the run's reports are its own, not a session's
}

void pass_history_on(const report::ReporterOptions& reports, std::vector<std::string>& suite_args) {
  if (!reports.history.empty()) suite_args.insert(suite_args.end(), {"--history", reports.history});
}

namespace {

void say_issues(const ConfigError& e) {
  for (const auto& i : e.issues()) std::cerr << "error: " << i.to_string() << "\n";
}

}  // namespace

std::optional<int> check_at_edge(CLI::App& app, const char* who, const std::function<void()>& check) {
  app.footer(kExitCodeTable);  // --help and the man page list the one table
  try {
    check();
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << who << ": " << e.what() << "\n" << app.help();
    return kExitUsage;
  } catch (const ConfigError& e) {
    say_issues(e);
    return kExitUsage;
  } catch (
      const std::exception& e) {  // not bad input it could name (an output it cannot write): the tool failed
    std::cerr << who << ": " << e.what() << "\n";
    return kExitInfra;
  }
}

int run_at_edge(const char* who, const std::function<int()>& run, const std::string& after) {
  try {
    return run();
  } catch (const ConfigError& e) {
    say_issues(e);
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << who << ": " << e.what() << (after.empty() ? "" : " (" + after + ")") << "\n";
    return kExitInfra;
  }
}

}  // namespace cvs::fleet
