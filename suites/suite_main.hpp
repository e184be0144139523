// The shared main() of the jaxmaxtext suite executables.
#pragma once

#include "cvs/config/config.hpp"

namespace cvs::suites {

// Parses the suite's own flags (after or among gtest's), loads the config and cluster, installs
// the report listener and the cluster Environment, and runs every test. Exit 2 on bad input.
int run_suite(int argc, char** argv, const char* suite_name, Mode mode);

}  // namespace cvs::suites
