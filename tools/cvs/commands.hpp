// The `cvs` subcommands: one short file each over cvs::core.
#pragma once

#include "cvs/base/exit_codes.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace cvs::cli {

using Args = std::vector<std::string>;

int cmd_config(const Args& args);   // cvs config validate|list|copy
int cmd_metrics(const Args& args);  // cvs metrics LOG... [--nodes N --gpus-per-node G]
int cmd_report(const Args& args);   // cvs report RESULTS.json [--out FILE]
int cmd_card(const Args& args);     // cvs card RESULTS.json [--out FILE]
int cmd_compare(const Args& args);  // cvs compare OLD NEW [--tolerance-pct P]
int cmd_run(const Args& args);      // cvs run SUITE [args] (execs the suite binary)
int cmd_fleet(const Args& args);
int cmd_certify(const Args& args);
int cmd_calibrate(const Args& args);   // cvs calibrate --config FILE [--cluster FILE] [--repeats N]
int cmd_history(const Args& args);     // cvs history sessions|node|lemons|trend|ingest|export
int cmd_setup_venv(const Args& args);  // cvs setup-venv [--venv DIR] [--python PY] [--wheels DIR]

// Bad input that is not a config (a results.json that is not JSON): exit 2 in main.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The suite's executable beside this one (layout.hpp's companion_program); BadInput naming where
// it looked when there is none.
std::filesystem::path suite_executable(const std::string& suite);

// Exit codes shared by every subcommand: the one table (base/exit_codes.hpp).
using cvs::kExitFail;
using cvs::kExitInfra;
using cvs::kExitOk;
using cvs::kExitUsage;

}  // namespace cvs::cli
