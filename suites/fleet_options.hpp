// The command-line options fleet mode and certify share.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>

#include "cvs/fleet/fleet.hpp"

namespace cvs::fleet {

// --max-parallel (runs at once; 0 every node) and the outlier policy's --max-z,
// --min-deviation-pct (into policy.min_deviation as a fraction) and --min-fleet.
void add_policy_options(CLI::App& app, FleetPolicy& policy, std::size_t& max_parallel,
                        const char* parallel_what);

}  // namespace cvs::fleet
