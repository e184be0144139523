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

}  // namespace cvs
