#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/base/cli_checks.hpp"
#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/results/compare.hpp"
#include "cvs/results/results_file.hpp"

namespace cvs::cli {

// `cvs compare OLD/results.json NEW/results.json [--tolerance-pct P] [--json]`: exit 1 on a regression.
int cmd_compare(const Args& args) {
  CLI::App app{"cvs compare: per sweep and metric, old and new values and the delta; exit 1 on a regression",
               "cvs compare"};
  std::string old_file, new_file;
  double tol = 5.0;
  bool json = false;
  app.add_option("old", old_file, "the earlier results.json")->required()->check(CLI::ExistingFile);
  app.add_option("new", new_file, "the later results.json")->required()->check(CLI::ExistingFile);
  app.add_option("--tolerance-pct", tol, "how much worse is a regression, % (default 5)")
      ->check(cvs::cli_checks::kNonNegative);
  app.add_flag("--json", json, "print the comparison as JSON");
  if (auto rc = parse_cli(app, args)) return *rc;
  const Results docs[2] = {read_results(old_file), read_results(new_file)};
  const auto c = compare_results(docs[0], docs[1], tol);
  if (json) {
    std::cout << to_json(c, tol).dump(2) << "\n";
  } else {
    std::printf("%-30s %-40s %14s %14s %9s  %s\n", "SWEEP", "METRIC", "OLD", "NEW", "DELTA%", "");
    for (const auto& d : c.deltas) {
      const auto f = [&](double v) { return format_figure(d.metric, v); };
      std::string verdict = d.regression ? "REGRESSION" : "";
      if (d.old_interval)
        verdict += std::string(verdict.empty() ? "" : " ") + "[" + f(d.old_interval->first) + ", " +
                   f(d.old_interval->second) + "] -> [" + f(d.new_interval->first) + ", " +
                   f(d.new_interval->second) + "]" + (d.within_noise ? ": within noise" : "");
      std::printf("%-30s %-40s %14s %14s %+9.2f  %s\n", d.sweep.c_str(), ("training." + d.metric).c_str(),
                  f(d.old_value).c_str(), f(d.new_value).c_str(),
                  std::isfinite(d.delta_pct) ? d.delta_pct : 0.0, verdict.c_str());
    }
    for (const auto& n : c.notes) std::printf("note: %s\n", n.c_str());
    std::printf("%s (tolerance %.3g%%)\n", c.any_regression() ? "REGRESSION" : "no regression", tol);
  }
  return c.any_regression() ? kExitFail : kExitOk;
}

}  // namespace cvs::cli
