// The fleet's JUnit file (a testcase fleet/node.<name> per node) and its self-contained HTML page
// (the nodes worst first, and a strip chart of each figure across the nodes with the suspects
// marked), rendered from the score.
#pragma once

#include <string>

#include "cvs/fleet/fleet.hpp"
#include "cvs/fleet/fleet_pairs.hpp"

namespace cvs::report {

std::string render_fleet_html(const FleetScore& score, const std::vector<FleetNode>& nodes,
                              const FleetPolicy& policy, const std::string& title,
                              const PairsResult* pairs = nullptr);  // --pairs: its runs and findings

}  // namespace cvs::report
