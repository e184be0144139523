#include "cvs/catalog/outcome.hpp"

#include "cvs/base/enum_names.hpp"

namespace cvs {
namespace {

constexpr EnumWord<Outcome> kWords[] = {{Outcome::Pass, "PASS"},
                                        {Outcome::Fail, "FAIL"},
                                        {Outcome::Record, "RECORD"},
                                        {Outcome::NA, "N/A"},
                                        {Outcome::Inconclusive, "INCONCLUSIVE"},
                                        {Outcome::Error, "ERROR"},
                                        {Outcome::Skipped, "SKIPPED"}};

}  // namespace

std::string to_string(Outcome o) {
  return word_of(kWords, o);
}

std::optional<Outcome> outcome_from_string(std::string_view s) {
  return value_of(kWords, s);
}

int severity(Outcome o) {
  switch (o) {
    case Outcome::Fail:
      return 3;
    case Outcome::Error:
      return 2;
    case Outcome::Inconclusive:
      return 1;
    case Outcome::Pass:
    case Outcome::Record:
    case Outcome::NA:
    case Outcome::Skipped:
      break;
  }
  return 0;
}

Outcome worst_of(Outcome a, Outcome b) {
  return severity(b) > severity(a) ? b : a;
}

}  // namespace cvs
