#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/base/cli_checks.hpp"
#include "cvs/base/format.hpp"
#include "cvs/base/text.hpp"
#include "cvs/base/utc_time.hpp"
#include "cvs/catalog/stage_names.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/history/store.hpp"
#include "cvs/reporters.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/verdicts/calibration.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace cvs::cli {
namespace {

// Runs argv with this terminal's stdin/stdout/stderr and returns its exit code (-1: signal).
int run_attached(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::dup2(STDERR_FILENO, STDOUT_FILENO);  // stdout carries only the path written
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The repeats of a calibration: the suite's setup and training runs, each in its own folder and
// timed; one can run again with its config's steps multiplied (a copy beside the repeats).
class RepeatRunner {
 public:
  RepeatRunner(fs::path exe, std::string config, fs::path thresholds, std::string cluster, fs::path dir,
               std::vector<std::string> suite_args)
      : exe_(std::move(exe)),
        config_(std::move(config)),
        thresholds_(std::move(thresholds)),
        cluster_(std::move(cluster)),
        dir_(std::move(dir)),
        suite_args_(std::move(suite_args)) {}

  // Repeat i (0-based) with `factor` x the config's steps: kExitOk, or the suite's exit code (said on
  // stderr): 1 a gate failed or the run hung, 2 bad input, 3 the infrastructure or the tool failed.
  int run(std::size_t i, long long factor, std::vector<Results>& results, std::vector<double>& seconds) {
    const std::string name =
        "repeat-" + std::to_string(i + 1) + (factor > 1 ? "-x" + std::to_string(factor) : "");
    const fs::path rdir = dir_ / name;
    std::vector<std::string> argv = {
        exe_.string(),
        "--config",
        factor > 1 ? config_with_steps(factor).string() : config_,
        "--output",
        rdir.string(),
        "--quiet",
        "--gtest_filter=" + stage_names::filter_of({stage_names::kSetup, stage_names::kTrainingRun})};
    if (!cluster_.empty()) argv.insert(argv.end(), {"--cluster", cluster_});
    argv.insert(argv.end(), suite_args_.begin(), suite_args_.end());
    std::cerr << "cvs calibrate: repeat " << i + 1
              << (factor > 1 ? " (" + std::to_string(factor) + "x the steps)" : "") << " -> " << rdir.string()
              << "\n";
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run_attached(argv);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0 || !fs::exists(rdir / "results.json")) {
      std::cerr << "cvs calibrate: repeat " << i + 1 << " did not pass (exit " << rc << "; report "
                << (rdir / "report.html").string()
                << "): calibrate on a known-good node or cluster; nothing was written\n";
      return rc == kExitFail || rc == kExitUsage ? rc : kExitInfra;  // no results: the tool failed
    }
    if (results.size() <= i) results.resize(i + 1), seconds.resize(i + 1);
    results[i] = read_results(rdir / "results.json");
    seconds[i] = took;
    return kExitOk;
  }

 private:
  // The config with every step count multiplied (train_params.maxtext_config.steps and each sweep's):
  // the same sweeps, longer. Written once per factor beside the repeats.
  fs::path config_with_steps(long long factor) const {
    const fs::path p = dir_ / ("config-x" + std::to_string(factor) + ".json");
    if (!fs::exists(p)) write_config_with_steps(config_, thresholds_, factor, p);
    return p;
  }

  fs::path exe_;
  std::string config_;
  fs::path thresholds_;
  std::string cluster_;
  fs::path dir_;
  std::vector<std::string> suite_args_;
};

// The sessions --from names: each a results.json of this very config (its effective sha256), each
// sweep of the config run. BadInput (exit 2) otherwise.
std::vector<Results> read_sessions(const std::vector<std::string>& files, const SuiteConfig& cfg) {
  if (files.size() < 3)
    throw BadInput("cvs calibrate --from: " + std::to_string(files.size()) +
                   " session(s); the rule's median and MAD need at least 3 (a week of nightly runs is 7)");
  std::vector<Results> out;
  for (const auto& f : files) {
    auto r = read_results(f);  // ConfigError (exit 2) when it is not a results.json
    if (r.config.sha256 != cfg.sha256)
      throw BadInput(f + ": /config/sha256 is " + r.config.sha256 + " (" + r.config.file +
                     "), the config given is " + cfg.sha256 +
                     ": calibrate from sessions of this config (and cluster overrides)");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

// Writes the threshold file; an earlier one at the same place is kept beside it, never lost.
void write_calibration(const fs::path& dest, const ordered_json& file) {
  fs::create_directories(dest.parent_path().empty() ? fs::path(".") : dest.parent_path());
  if (fs::exists(dest)) {
    const fs::path kept =
        dest.parent_path() / (dest.stem().string() + ".replaced-" + utc_now("%Y%m%d-%H%M%S") + ".json");
    fs::rename(dest, kept);
    std::cerr << "cvs calibrate: the earlier calibration is kept as " << kept.string() << "\n";
  }
  write_file_whole(dest, file.dump(2) + "\n");  // aside, then renamed: never half a calibration
  std::cout << fs::absolute(dest).string() << "\n";
}

// Remembered in the results history, as every session is, and exported as asked (--openmetrics,
// --pushgateway): through the reporters; one that fails changes nothing here.
void report_calibration(const report::ReporterOptions& reports, const fs::path& dest,
                        const std::vector<Results>& results) {
  history::SessionEntry entry;
  try {
    entry = history::entry_of_calibration(dest, results);
  } catch (const std::exception& e) {
    std::cerr << "cvs calibrate: history not written: " << e.what()
              << " (the calibration file is complete)\n";
    return;
  }
  for (const auto& line :
       report::run_reporters(report::reporters(reports), {.folder = dest.parent_path(), .entry = &entry}))
    std::cerr << "cvs calibrate: " << line << "\n";
}

// What the calibration did beyond the rule, said on stderr and kept in its _calibration: the repeats
// run again (extended), the metrics it could not calibrate; the config it holds for is the one
// given (a repeat run longer measured the same sweeps' speed).
void say_and_keep(ordered_json& file, const fs::path& dest, const std::string& config_sha256,
                  const std::vector<std::string>& extended) {
  auto section = calibration_from_json(file["_calibration"], dest.string());
  section.provenance["config_sha256"] = config_sha256;
  section.extended = extended;
  file["_calibration"] = to_json(section);
  for (const auto& line : extended) std::cerr << "cvs calibrate: extended: " << line << "\n";
  for (const auto& [sweep, metrics] : section.not_calibrated)
    for (const auto& [metric, why] : metrics)
      std::cerr << "cvs calibrate: not calibrated: " << sweep << " " << metric << ": " << why
                << " (its gate stays as the base file has it)\n";
}

// Where the repeats come from and where the results go: --from, --work-dir, --history, the exports.
void add_source_options(CLI::App& app, std::vector<std::string>& from, std::string& work,
                        report::ReporterOptions& reports) {
  app.add_option("--from", from,
                 "results.json of sessions already run with this config on a known-good node or cluster "
                 "(at least 3): calibrate on them instead of running repeats");
  app.add_option("--history", reports.history,
                 "the results store (default: $CVS_HISTORY, else the default SQLite file; none: off)");
  report::add_output_options(app, reports);
  app.add_option("--work-dir", work, "where the repeats' reports go (default: cvs-results/calibrate-<time>)");
}

// `cvs calibrate --config FILE [--cluster FILE] [--repeats N | --from RESULTS.json...] [--out FILE]`:
// runs the config's sweeps N times (or reads sessions already run) and writes a threshold file
// whose speed gates come from what was measured.
int cmd_calibrate(const Args& args) {
  CLI::App app{
      "cvs calibrate: run the config's sweeps N times on a known-good node or cluster and write a "
      "threshold file whose speed gates derive from what was measured (rule: "
      "lib/cvs/verdicts/calibration.hpp)",
      "cvs calibrate"};
  std::string config, cluster, out, work;
  report::ReporterOptions reports;  // the history record and the exports
  reports.session_files = false;
  int repeats = 3;
  double budget_minutes = 15;
  CalibrationRule rule;
  std::vector<std::string> suite_args, from;
  app.add_option("--config", config, "suite config")->required();
  app.add_option("--cluster", cluster, "cluster file (default: one local node)");
  app.add_option("--repeats", repeats, "how many times to run the sweeps")->check(CLI::Range(1, 100));
  app.add_option(
         "--budget-minutes", budget_minutes,
         "the most minutes the repeats may take: a repeat too short or too noisy for an interval runs "
         "again with twice the steps while its expected time fits (default 15: the CPU default's "
         "repeats take about 1.5 min)")
      ->check(cvs::cli_checks::positive(false));
  app.add_option("--out", out, "threshold file to write (default: the calibration folder, see README)");
  app.add_option("--k", rule.k, "spreads between the centre and a gate")->check(CLI::Range(0.0, 100.0));
  auto* min_slack = app.add_option("--min-slack-pct", rule.min_slack_pct,
                                   "least slack between the centre and a gate, % (default: the config's "
                                   "statistics.calibration_min_slack_pct)")
                        ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--max-slack-pct", rule.max_slack_pct, "most slack between the centre and a gate, %")
      ->check(CLI::Range(0.0, 1000.0));
  add_source_options(app, from, work, reports);
  app.add_option("suite_args", suite_args, "after --: passed to the suite (e.g. --poll-interval-s 1)");
  if (auto rc = parse_cli(app, args)) return *rc;
  const auto cl = cluster.empty() ? default_cluster() : load_cluster(cluster);
  config = config_argument(config);                      // a path, or a shipped config's name
  const auto cfg = load_config_for_cluster(config, cl);  // ConfigError: exit 2 in main
  if (min_slack->count() == 0) rule.min_slack_pct = cfg.statistics.calibration_min_slack_pct;
  if (rule.min_slack_pct > rule.max_slack_pct) {
    std::cerr << "cvs calibrate: the least slack " << rule.min_slack_pct << " % exceeds --max-slack-pct "
              << rule.max_slack_pct << "\n";
    return kExitUsage;
  }
  const auto base =
      cfg.threshold_path.empty() ? std::nullopt : std::optional(load_thresholds(cfg.threshold_path));
  const std::string suite = cfg.mode == Mode::Distributed ? "jaxmaxtext_distributed" : "jaxmaxtext_single";
  const fs::path exe = from.empty() ? suite_executable(suite) : fs::path();  // BadInput: exit 2
  const fs::path dest = out.empty() ? default_calibration_file(config, cluster) : fs::path(out);
  const fs::path dir =
      work.empty() ? fs::path("cvs-results") / ("calibrate-" + utc_now("%Y%m%d-%H%M%S")) : fs::path(work);
  const auto started = std::chrono::steady_clock::now();
  std::vector<Results> results;
  std::vector<double> seconds;  // each repeat's wall time (none for --from)
  // The repeats record where the calibration does (--history), as every run of it.
  if (!reports.history.empty()) suite_args.insert(suite_args.end(), {"--history", reports.history});
  RepeatRunner runner(exe, config, cfg.threshold_path, cluster, dir, suite_args);
  if (!from.empty()) results = read_sessions(from, cfg);
  for (int i = 0; from.empty() && i < repeats; ++i)
    if (const int rc = runner.run(static_cast<std::size_t>(i), 1, results, seconds); rc != kExitOk) return rc;
  ordered_json file;
  std::vector<std::string> extended;
  try {
    const auto rerun = [&](std::size_t i, long long factor, const std::string& why) {
      std::cerr << "cvs calibrate: " << why << ": running repeat " << i + 1 << " again with " << factor
                << "x the steps\n";
      return runner.run(i, factor, results, seconds) == kExitOk;
    };
    file = calibrate_extending(results, seconds, base, rule,
                               {budget_minutes * 60, started, utc_now("%Y-%m-%d")}, rerun, extended);
  } catch (const CalibrationRefused& e) {
    std::cerr << "cvs calibrate: refused: " << e.what() << "; nothing was written\n";
    return kExitFail;
  }
  say_and_keep(file, dest, cfg.sha256, extended);
  write_calibration(dest, file);
  report_calibration(reports, dest, results);
  return kExitOk;
}

}  // namespace cvs::cli
