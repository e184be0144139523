// The current UTC time formatted with strftime (report stamps, run names, dates in files).
#pragma once

#include <string>

namespace cvs {

// e.g. utc_now("%Y-%m-%dT%H:%M:%SZ"), utc_now("%Y%m%d-%H%M%S"), utc_now("%Y-%m-%d").
std::string utc_now(const char* format);

}  // namespace cvs
