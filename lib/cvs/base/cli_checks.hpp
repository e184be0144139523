// Number checks for the front ends' CLI11 options, with refusals a user can read: CLI11's own
// NonNegativeNumber and PositiveNumber print their bounds in full ("--max-parallel: Value 0 not in
// range 0.000000 to 17976931348623157...": DBL_MIN and DBL_MAX), which says neither what was wrong
// nor what to pass.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace cvs::cli_checks {

// "--budget-minutes: -1 is negative: pass 0 or more"
inline const CLI::Validator kNonNegative(
    [](std::string& s) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(s, v)) return s + " is not a number";
      return v >= 0 ? "" : s + " is negative: pass 0 or more";
    },
    "NUMBER >= 0", "non-negative");

// "--max-parallel: 0 is not above 0: pass 1 or more" (an integer option), "... pass a number above 0"
inline CLI::Validator positive(bool integer) {
  return CLI::Validator(
      [integer](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return s + " is not a number";
        return v > 0 ? "" : s + " is not above 0: pass " + (integer ? "1 or more" : "a number above 0");
      },
      integer ? "INTEGER >= 1" : "NUMBER > 0", "positive");
}

}  // namespace cvs::cli_checks
