// How the suite prints a figure in messages, reports and cards: six significant digits (%g),
// nan / inf / -inf spelled out. One formatter, through fmt (spdlog's).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace cvs {

inline std::string short_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

}  // namespace cvs
