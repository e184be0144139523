// One exit-code table for every front end: `cvs` and its commands, the suites, fleet mode, certify,
// calibrate, the history, the GPU probe. Every --help (and so every man page) ends with its words.
#pragma once

namespace cvs {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;   // a gate failed (FAIL, an INCONCLUSIVE that fails), a regression
inline constexpr int kExitUsage = 2;  // bad input: config errors, bad or unknown arguments; nothing run
inline constexpr int kExitInfra = 3;  // the tool or the infrastructure failed (ERROR, an unexpected error)

inline constexpr const char* kExitCodeTable =
    "exit codes (every command, the suites, fleet mode and certify alike):\n"
    "  0 ok, 1 a gate failed, 2 bad input (config errors, bad or unknown arguments: nothing run),\n"
    "  3 the tool or the infrastructure failed (a store not reached, an unexpected error)";

}  // namespace cvs
