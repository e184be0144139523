#include "cvs/catalog/outcome.hpp"

#include <array>
#include <utility>

namespace cvs {
namespace {

constexpr std::array<std::pair<Outcome, std::string_view>, 7> kWords = {
    {{Outcome::Pass, "PASS"},
     {Outcome::Fail, "FAIL"},
     {Outcome::Record, "RECORD"},
     {Outcome::NA, "N/A"},
     {Outcome::Inconclusive, "INCONCLUSIVE"},
     {Outcome::Error, "ERROR"},
     {Outcome::Skipped, "SKIPPED"}}};

}  // namespace

std::string to_string(Outcome o) {
  for (const auto& [outcome, word] : kWords)
    if (outcome == o) return std::string(word);
  return "?";
}

std::optional<Outcome> outcome_from_string(std::string_view s) {
  for (const auto& [outcome, word] : kWords)
    if (word == s) return outcome;
  return std::nullopt;
}

}  // namespace cvs
