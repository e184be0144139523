// The trend page of `cvs history trend --out`: a metric's estimates and intervals per session, the
// provenance changes marked and the change points with their levels (history/trend.hpp finds
// them), one self-contained HTML file.
#pragma once

#include <string>
#include <vector>

#include "cvs/history/trend.hpp"

namespace cvs::report {

std::string render_trend_html(const std::string& config, const std::string& metric,
                              const std::vector<history::TrendPoint>& points,
                              const std::vector<history::ChangePoint>& changes);

}  // namespace cvs::report
