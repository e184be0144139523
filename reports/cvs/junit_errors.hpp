// gtest's JUnit XML knows only <failure>. A stage that ended ERROR (infrastructure: an unreachable
// node, a failed launch, an exception) records the property outcome=ERROR; this turns its
// <failure> into <error> and recounts the failures/errors attributes, so Jenkins shows an
// infrastructure error apart from a missed gate.
#pragma once

#include <filesystem>
#include <string>

namespace cvs::report {

std::string junit_failures_to_errors(const std::string& xml);
// Rewrites the file in place; false when it cannot be read or written.
bool rewrite_junit_errors(const std::filesystem::path& file);

}  // namespace cvs::report
