// The self-contained HTML report (inline CSS and SVG, no network), rendered from results.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace cvs::report {

std::string render_html(const nlohmann::ordered_json& results);
std::string html_escape(const std::string& s);

}  // namespace cvs::report
