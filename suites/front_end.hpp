// What the front ends of fleet mode and certify share: their options and their edge.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cvs/fleet/fleet.hpp"
#include "cvs/reporters.hpp"

namespace cvs::fleet {

// --max-parallel (runs at once; 0 every node) and the outlier policy's --max-z,
// --min-deviation-pct (into policy.min_deviation as a fraction) and --min-fleet.
void add_policy_options(CLI::App& app, FleetPolicy& policy, std::size_t& max_parallel,
                        const char* parallel_what);

// --history (the store this run and every suite run it starts are recorded in) and every output
// option (reporters.hpp), for a run of suite runs: `what` names the run in --history's help.
void add_report_options(CLI::App& app, report::ReporterOptions& reports, const char* what);
// After parsing: the suite runs are recorded in the same store (--history passed on to each).
void pass_history_on(const report::ReporterOptions& reports, std::vector<std::string>& suite_args);

// The edge, once per front end. Parsing and checking the inputs (`check`): --help prints the help
// (exit 0), a parse error says it with the help and a ConfigError each issue (exit 2); nullopt when
// `check` returned and the run may start.
std::optional<int> check_at_edge(CLI::App& app, const char* who, const std::function<void()>& check);
// The run (`run`, its exit code): a ConfigError it meets (a config it derives) is bad input, exit 2;
// any other exception an infrastructure failure, exit 3, said with `after` (what was kept). The
// stack has unwound by then: whatever the run held (a Slurm allocation, children) is released.
int run_at_edge(const char* who, const std::function<int()>& run, const std::string& after = "");

}  // namespace cvs::fleet
