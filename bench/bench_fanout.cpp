// The suite's own overhead at scale: N simulated nodes (local transport processes running
// bench/fake_trainer.sh) driven through setup, start, streaming and stop by the real Launcher.
// Reports the wall time of setup and start, the poll round, the suite's CPU per node per poll
// (the controller process only: the simulated nodes' own work is theirs), and the time from one
// node's error line to the run's verdict and from the verdict to every node stopped.
// Usage: bench_fanout [--interval-s S] [N...]   (default: the suite's 5 s; 16 64 256)
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cvs/config/cluster.hpp"
#include "cvs/exec/launch.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
constexpr int kSteps = 240, kFailStep = 50;  // every node still runs when the last one fails
constexpr double kStepS = 0.5;

// n local nodes running bench/fake_trainer.sh; the last rank fails at kFailStep, stamping when.
cvs::SuiteConfig bench_config(const fs::path& root, const std::string& stamp, std::size_t n) {
  nlohmann::ordered_json j = {
      {"gpu_name", "cpu"},
      {"gpus_per_node", 1},
      {"threshold_json", "none.json"},
      {"paths", {{"shared_fs", root.string()}, {"temp_dir", (root / "tmp").string()}}},
      {"container",
       {{"name", "bench"},
        {"runtime", "local"},
        {"env",
         {{"CVS_BENCH_STEPS", std::to_string(kSteps)},
          {"CVS_BENCH_STEP_S", std::to_string(kStepS)},
          {"CVS_BENCH_FAIL_STEP", std::to_string(kFailStep)},
          {"CVS_BENCH_FAIL_RANK", std::to_string(n - 1)},
          {"CVS_BENCH_FAIL_STAMP", stamp}}}}},
      {"train_params",
       {{"python", "sh"},
        {"train_script_paths", {std::string(CVS_BENCH_DIR) + "/fake_trainer.sh"}},
        {"maxtext_config", {{"steps", kSteps}}}}},
      {"sweeps", {{"BS=1", nlohmann::ordered_json::object()}}},
      {"runs", {"BS=1"}}};
  return cvs::load_config_text(j.dump(), "bench.json", {.user = "", .require_threshold_file = false});
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(std::getenv("CVS_BENCH_VERBOSE") ? spdlog::level::info : spdlog::level::warn);
  std::vector<std::size_t> sizes;
  double interval_s = 5.0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--interval-s" && i + 1 < argc)
      interval_s = std::stod(argv[++i]);
    else
      sizes.push_back(std::stoul(argv[i]));
  }
  if (sizes.empty()) sizes = {16, 64, 256};
  const int steps = kSteps;
  const fs::path root = fs::temp_directory_path() / ("cvs_bench_fanout_" + std::to_string(::getpid()));
  std::printf("poll interval %.2f s; every node logs a step each %.2f s; the last rank fails at step %d\n",
              interval_s, kStepS, kFailStep);
  std::printf("%6s %8s %8s %13s %23s %17s %19s\n", "nodes", "setup_s", "start_s", "poll_round_s",
              "suite_cpu_us/node/poll", "error->verdict_s", "verdict->stopped_s");
  for (std::size_t n : sizes) {
    fs::remove_all(root);
    const std::string stamp = (root / "failed_at").string();
    auto cfg = bench_config(root, stamp, n);
    auto cluster = cvs::local_cluster(n);
    cvs::PollPolicy p;
    p.interval = std::chrono::milliseconds(static_cast<long>(interval_s * 1000));
    p.startup_s = 600;
    p.per_step_s = 10;
    cvs::Launcher l(cfg, cluster, p);
    auto t0 = Clock::now();
    auto problems = l.setup();
    const double setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!problems.empty()) {
      std::fprintf(stderr, "setup failed: %s\n", problems.front().c_str());
      return 1;
    }
    cvs::RunRequest req;
    req.run_name = "fanout" + std::to_string(n);
    req.label = req.run_name;
    req.steps = steps;
    req.maxtext_config = {{"steps", steps}};
    req.copy_dir = root / "copy";
    int rounds = 0;
    double first_at = 0, last_at = 0, cpu_first = 0, cpu_last = 0;
    t0 = Clock::now();
    double verdict_at = 0, cpu_verdict = 0;  // the last progress report comes with the failure verdict
    auto o = l.run(req, [&](const cvs::Progress&) {
      const double now = std::chrono::duration<double>(Clock::now() - t0).count();
      if (++rounds == 1) {
        first_at = now;
        cpu_first = cpu_seconds();
      }
      verdict_at = now;
      cpu_verdict = cpu_seconds();
      if (now > last_at + 0.5 * interval_s || rounds == 1) {  // a regular poll report
        last_at = now;
        cpu_last = cpu_seconds();
      }
    });
    const double end_at = std::chrono::duration<double>(Clock::now() - t0).count();
    if (std::getenv("CVS_BENCH_VERBOSE"))
      std::printf("suite CPU during the stop: %.2f s\n", cpu_seconds() - cpu_verdict);
    const auto stopped = std::chrono::system_clock::now();
    double failed_at = 0;
    std::ifstream(stamp) >> failed_at;
    const double err_to_stop =
        failed_at > 0 ? std::chrono::duration<double>(stopped.time_since_epoch()).count() - failed_at : -1;
    const double verdict_to_stop = end_at - verdict_at;
    const int polls = static_cast<int>((last_at - first_at) / interval_s + 0.5);
    const double poll_round = polls > 0 ? (last_at - first_at) / polls : 0;
    const double cpu_per_node_poll = polls > 0 ? (cpu_last - cpu_first) / polls / static_cast<double>(n) : 0;
    std::printf("%6zu %8.2f %8.2f %13.3f %23.1f %17.2f %19.2f   %s\n", n, setup_s, o.start_seconds,
                poll_round, 1e6 * cpu_per_node_poll, err_to_stop - verdict_to_stop, verdict_to_stop,
                o.ok ? "(no error seen?)" : o.failure.substr(0, 40).c_str());
    std::fflush(stdout);
  }
  if (!std::getenv("CVS_BENCH_KEEP")) fs::remove_all(root);  // kept for a look at the node files
  return 0;
}
