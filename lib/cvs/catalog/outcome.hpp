// Outcome: what a gate or a stage came to, the one list every layer uses (evaluations, stages,
// the session's status, results.json, the report's badges, JUnit, the cards, fleet mode).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cvs {

// PASS / FAIL: a gate decided. RECORD: measured, not gated. N/A: the run did not produce the
// metric. INCONCLUSIVE: the interval straddles the threshold. ERROR: the infrastructure kept the
// stage from deciding. SKIPPED: the stage did not run.
enum class Outcome { Pass, Fail, Record, NA, Inconclusive, Error, Skipped };
// "PASS", "FAIL", "RECORD", "N/A", "INCONCLUSIVE", "ERROR", "SKIPPED"
std::string to_string(Outcome o);
// The inverse of to_string; nullopt for any other word.
std::optional<Outcome> outcome_from_string(std::string_view s);
// The word of an outcome that may be absent (a run that left no results): `none` then.
inline std::string to_string(const std::optional<Outcome>& o, std::string_view none) {
  return o ? to_string(*o) : std::string(none);
}
// The one order of how bad an outcome is, wherever several become one (a session's status, a
// tier's outcome): FAIL (a gate the cluster missed: the verdict) over ERROR (the infrastructure
// kept a stage from deciding: no verdict) over INCONCLUSIVE over the rest (PASS, RECORD, N/A,
// SKIPPED), which say nothing against the cluster.
int severity(Outcome o);
// The worse of two by severity (the first when equal).
Outcome worst_of(Outcome a, Outcome b);

// Outcomes that keep a stage from verifying anything (a card entry, a fleet node): FAIL,
// INCONCLUSIVE, ERROR.
inline bool is_unverified(Outcome o) {
  return o == Outcome::Fail || o == Outcome::Inconclusive || o == Outcome::Error;
}

}  // namespace cvs
