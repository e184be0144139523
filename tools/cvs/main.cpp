// cvs — the command-line tool of cvs-maxtext. The one place that catches and prints errors.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "commands.hpp"
#include "cvs/base/exit_codes.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/history/db.hpp"

namespace {

constexpr const char* kUsage = R"(usage: cvs <command> [args]

commands:
  config validate FILE        check a suite config and its threshold file; every error with its JSON pointer
  config list                 the shipped configs with GPU, mode and precisions
  config copy NAME [DIR]      copy a shipped config and its threshold file(s) side by side (never overwrites)
  run SUITE [--config FILE] [--cluster FILE] [--output DIR] [gtest flags]
                              run jaxmaxtext_single, jaxmaxtext_distributed or jaxmaxtext_fleet; prints
                              where the report is
  fleet --cluster FILE --config FILE [--pairs DIST.json] [--baseline CAL] [--output DIR] [...]
                              fleet mode (= run jaxmaxtext_fleet): the single-node workload on every node,
                              each scored against the fleet; suspects, healthy_cluster.json, slurm_exclude.txt
  certify --cluster FILE --config FILE [--distributed-config DIST.json] [--baseline CAL] [--min-nodes N]
          [--budget-minutes M] [--output DIR] [--drain] [--resume DIR] [...]
                              certify a cluster (= run jaxmaxtext_certify): preflight, nodes, links, scaling
                              ladder, each on the nodes left healthy; certificate.json/html, junit.xml,
                              slurm_exclude.txt, healthy_cluster.json; exit 0 certified, 1 not, 3 infrastructure
  calibrate --config FILE [--cluster FILE] [--repeats N | --from RESULTS.json...] [--out FILE] [-- SUITE ARGS]
                              run the sweeps N times (default 3) on a known-good node or cluster, or read
                              sessions already run, and write a threshold file whose speed gates come from
                              what was measured
  report RESULTS.json [--out FILE]
                              render the HTML report of a session from its results.json
  card RESULTS.json [--out FILE]
                              model-verification entries (Megatron-Bridge card schema) of a session
  compare OLD/results.json NEW/results.json [--tolerance-pct P] [--json]
                              per sweep and metric: old, new, delta %; exit 1 on a regression
  metrics LOG... [--nodes N] [--gpus-per-node G] [--config FILE] [--confidence C]
                              print the metrics and steady state of MaxText training logs as JSON
  history [--history STORE] sessions|node NAME|lemons|trend|ingest DIR...|export
                              the results store: every session, fleet run and calibration, a node's ledger,
                              lemon nodes, a metric's trend with its change points, OpenMetrics export

  setup-venv [--venv DIR] [--python PY] [--wheels DIR] [--force]
                              make the venv the CPU default trains in (MaxText on JAX's CPU backend,
                              pinned); default ${XDG_DATA_HOME:-~/.local/share}/cvs-maxtext/venv, or
                              $CVS_VENV; --wheels installs from a folder on an air-gapped node
  --version                   this tool's version

where: configs and thresholds in {cvs_root}/configs, {cvs_root}/thresholds; {cvs_root} is $CVS_ROOT,
else the share/cvs-maxtext above this binary (an install's <prefix>/share/cvs-maxtext)

)";

// Each command's name and its entry (commands.hpp).
constexpr std::pair<std::string_view, int (*)(const cvs::cli::Args&)> kCommands[] = {
    {"config", cvs::cli::cmd_config},
    {"metrics", cvs::cli::cmd_metrics},
    {"run", cvs::cli::cmd_run},
    {"fleet", cvs::cli::cmd_fleet},
    {"certify", cvs::cli::cmd_certify},
    {"calibrate", cvs::cli::cmd_calibrate},
    {"report", cvs::cli::cmd_report},
    {"card", cvs::cli::cmd_card},
    {"compare", cvs::cli::cmd_compare},
    {"history", cvs::cli::cmd_history},
    {"setup-venv", cvs::cli::cmd_setup_venv}};

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S] [%^%l%$] %v");
  if (argc < 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    std::fputs((std::string(cvs::kExitCodeTable) + "\n").c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? cvs::cli::kExitUsage : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "-V") {
    std::cout << "cvs (cvs-maxtext) " << CVS_VERSION << "\n";
    return 0;
  }
  cvs::cli::Args args(argv + 2, argv + argc);
  try {
    for (const auto& [name, run] : kCommands)
      if (cmd == name) return run(args);
    std::cerr << "cvs: unknown command '" << cmd << "'\n" << kUsage;
    return cvs::cli::kExitUsage;
  } catch (const cvs::ConfigError& e) {
    for (const auto& i : e.issues()) std::cerr << "error: " << i.to_string() << "\n";
    std::cerr << e.issues().size() << " error(s)\n";
    return cvs::cli::kExitUsage;
  } catch (const cvs::cli::BadInput& e) {
    std::cerr << "cvs " << cmd << ": " << e.what() << "\n";
    return cvs::cli::kExitUsage;
  } catch (const cvs::history::StoreError& e) {  // the store could not be reached or read
    std::cerr << "cvs " << cmd << ": " << e.what() << "\n";
    return cvs::cli::kExitInfra;
  } catch (const std::exception& e) {  // not a gate's verdict: the tool failed
    std::cerr << "cvs " << cmd << ": " << e.what() << "\n";
    return cvs::cli::kExitInfra;
  }
}
