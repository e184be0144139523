// results.json: the versioned, machine-readable record of a session that the HTML report and
// `cvs compare` / `cvs card` read. Built with nlohmann::json, never by hand.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "cvs/session.hpp"
#include "cvs/test_record.hpp"

namespace cvs::report {

inline constexpr int kResultsSchemaVersion = 1;

nlohmann::ordered_json build_results(const fixtures::Session& s, const std::vector<TestRecord>& tests);

}  // namespace cvs::report
