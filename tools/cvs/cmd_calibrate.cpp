#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
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

// Runs the suite's setup and training runs `repeats` times; their results.json, or nothing when a
// repeat did not pass (said on stderr).
std::optional<std::vector<Results>> run_repeats(const fs::path& exe, const std::string& config,
                                                const std::string& cluster, const fs::path& dir, int repeats,
                                                const std::vector<std::string>& suite_args) {
  std::vector<Results> results;
  for (int i = 1; i <= repeats; ++i) {
    const fs::path rdir = dir / ("repeat-" + std::to_string(i));
    std::vector<std::string> argv = {
        exe.string(),
        "--config",
        config,
        "--output",
        rdir.string(),
        "--quiet",
        "--gtest_filter=" + stage_names::filter_of({stage_names::kSetup, stage_names::kTrainingRun})};
    if (!cluster.empty()) argv.insert(argv.end(), {"--cluster", cluster});
    argv.insert(argv.end(), suite_args.begin(), suite_args.end());
    std::cerr << "cvs calibrate: repeat " << i << "/" << repeats << " -> " << rdir.string() << "\n";
    const int rc = run_attached(argv);
    if (rc != 0 || !fs::exists(rdir / "results.json")) {
      std::cerr << "cvs calibrate: repeat " << i << " did not pass (exit " << rc << "; report "
                << (rdir / "report.html").string()
                << "): calibrate on a known-good node or cluster; nothing was written\n";
      return std::nullopt;
    }
    results.push_back(read_results(rdir / "results.json"));
  }
  return results;
}

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
  CalibrationRule rule;
  std::vector<std::string> suite_args, from;
  app.add_option("--config", config, "suite config")->required();
  app.add_option("--cluster", cluster, "cluster file (default: one local node)");
  app.add_option("--repeats", repeats, "how many times to run the sweeps")->check(CLI::Range(1, 100));
  app.add_option("--out", out, "threshold file to write (default: the calibration folder, see README)");
  app.add_option("--k", rule.k, "spreads between the centre and a gate")->check(CLI::Range(0.0, 100.0));
  auto* min_slack = app.add_option("--min-slack-pct", rule.min_slack_pct,
                                   "least slack between the centre and a gate, % (default: the config's "
                                   "statistics.calibration_min_slack_pct)")
                        ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--max-slack-pct", rule.max_slack_pct, "most slack between the centre and a gate, %")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--from", from,
                 "results.json of sessions already run with this config on a known-good node or cluster "
                 "(at least 3): calibrate on them instead of running repeats");
  app.add_option("--history", reports.history,
                 "the results store (default: $CVS_HISTORY, else the default SQLite file; none: off)");
  report::add_output_options(app, reports);
  app.add_option("--work-dir", work, "where the repeats' reports go (default: cvs-results/calibrate-<time>)");
  app.add_option("suite_args", suite_args, "after --: passed to the suite (e.g. --poll-interval-s 1)");
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const auto cl = cluster.empty() ? default_cluster() : load_cluster(cluster);
  config = config_argument(config);                      // a path, or a shipped config's name
  const auto cfg = load_config_for_cluster(config, cl);  // ConfigError: exit 2 in main
  if (min_slack->count() == 0) rule.min_slack_pct = cfg.statistics.calibration_min_slack_pct;
  if (rule.min_slack_pct > rule.max_slack_pct) {
    std::cerr << "cvs calibrate: the least slack " << rule.min_slack_pct << " % exceeds --max-slack-pct "
              << rule.max_slack_pct << "\n";
    return kExitUsage;
  }
  std::optional<ThresholdFile> base;
  if (!cfg.threshold_path.empty()) base = load_thresholds(cfg.threshold_path);
  const std::string suite = cfg.mode == Mode::Distributed ? "jaxmaxtext_distributed" : "jaxmaxtext_single";
  const fs::path exe = from.empty() ? suite_executable(suite) : fs::path();  // BadInput: exit 2
  const fs::path dest = out.empty() ? default_calibration_file(config, cluster) : fs::path(out);
  const fs::path dir =
      work.empty() ? fs::path("cvs-results") / ("calibrate-" + utc_now("%Y%m%d-%H%M%S")) : fs::path(work);
  const auto results = from.empty() ? run_repeats(exe, config, cluster, dir, repeats, suite_args)
                                    : std::optional(read_sessions(from, cfg));
  if (!results) return kExitFail;
  ordered_json file;
  try {
    file = build_calibration(*results, base, rule, utc_now("%Y-%m-%d"));
  } catch (const CalibrationRefused& e) {
    std::cerr << "cvs calibrate: refused: " << e.what() << "; nothing was written\n";
    return kExitFail;
  }
  for (const auto& [sweep, metrics] :
       calibration_from_json(file["_calibration"], dest.string()).not_calibrated)
    for (const auto& [metric, why] : metrics)
      std::cerr << "cvs calibrate: not calibrated: " << sweep << " " << metric << ": " << why
                << " (its gate stays as the base file has it)\n";
  write_calibration(dest, file);
  report_calibration(reports, dest, *results);
  return kExitOk;
}

}  // namespace cvs::cli
