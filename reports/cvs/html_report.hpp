// The self-contained HTML report (inline CSS and SVG, no network), rendered from a session's
// typed results (results_file.hpp).
#pragma once

#include <string>

#include "cvs/base/text.hpp"
#include "cvs/results/results_file.hpp"

namespace cvs::report {

std::string render_html(const Results& results);
using cvs::html_escape;  // lib/cvs/base/text.hpp

}  // namespace cvs::report
