// The self-contained HTML report (inline CSS and SVG, no network), rendered from a session's
// typed results (results_file.hpp).
#pragma once

#include <string>

#include "cvs/results/results_file.hpp"

namespace cvs::report {

std::string render_html(const Results& results);
std::string html_escape(const std::string& s);

}  // namespace cvs::report
