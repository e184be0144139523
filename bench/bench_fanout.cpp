// The suite's own overhead at scale: N simulated nodes (local transport processes running
// bench/fake_trainer.sh) driven through setup, start, polling and stop by the real Launcher.
// Reports wall time per phase, the overhead per node, and the time from one node's error line
// to every node stopped. Usage: bench_fanout [N...]   (default 16 64 256)
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cvs/cluster.hpp"
#include "cvs/launch.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoul(argv[i]));
  if (sizes.empty()) sizes = {16, 64, 256};
  const fs::path root = fs::temp_directory_path() / ("cvs_bench_fanout_" + std::to_string(::getpid()));
  std::printf("%8s %10s %10s %12s %14s %18s\n", "nodes", "setup_s", "start_s", "poll_s/round", "overhead_ms/node", "error->stopped_s");
  for (std::size_t n : sizes) {
    fs::remove_all(root);
    const std::string stamp = (root / "failed_at").string();
    nlohmann::ordered_json j = {
        {"gpu_name", "cpu"},
        {"gpus_per_node", 1},
        {"threshold_json", "none.json"},
        {"paths", {{"shared_fs", root.string()}, {"temp_dir", (root / "tmp").string()}}},
        {"container",
         {{"name", "bench"},
          {"runtime", "local"},
          {"env", {{"CVS_BENCH_STEPS", "40"}, {"CVS_BENCH_FAIL_RANK", std::to_string(n - 1)}, {"CVS_BENCH_FAIL_STAMP", stamp}}}}},
        {"train_params",
         {{"python", "sh"}, {"train_script_paths", {std::string(CVS_BENCH_DIR) + "/fake_trainer.sh"}}, {"maxtext_config", {{"steps", 40}}}}},
        {"sweeps", {{"BS=1", nlohmann::ordered_json::object()}}},
        {"runs", {"BS=1"}}};
    auto cfg = cvs::load_config_text(j.dump(), "bench.json", {.user = "", .require_threshold_file = false});
    auto cluster = cvs::local_cluster(n);
    cvs::PollPolicy p;
    p.interval = std::chrono::milliseconds(200);
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
    req.steps = 40;
    req.maxtext_config = {{"steps", 40}};
    req.copy_dir = root / "copy";
    int rounds = 0;
    double first_poll_at = 0;
    t0 = Clock::now();
    auto o = l.run(req, [&](const cvs::Progress&) {
      if (++rounds == 1) first_poll_at = std::chrono::duration<double>(Clock::now() - t0).count();
    });
    const auto stopped = std::chrono::system_clock::now();
    const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
    double failed_at = 0;
    std::ifstream(stamp) >> failed_at;
    const double err_to_stop =
        failed_at > 0 ? std::chrono::duration<double>(stopped.time_since_epoch()).count() - failed_at : -1;
    const double poll_round = rounds > 1 ? (total_s - first_poll_at) / (rounds - 1) : total_s;
    // The poll interval is a sleep, not overhead: what remains is the fan-out round trip.
    const double overhead = std::max(0.0, poll_round - std::chrono::duration<double>(p.interval).count());
    std::printf("%8zu %10.2f %10.2f %12.3f %14.2f %18.2f   %s\n", n, setup_s, first_poll_at, poll_round,
                1000.0 * overhead / static_cast<double>(n), err_to_stop,
                o.ok ? "(no error seen?)" : o.failure.substr(0, 60).c_str());
  }
  fs::remove_all(root);
  return 0;
}
