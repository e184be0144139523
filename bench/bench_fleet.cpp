// Fleet scoring at cluster scale (Google Benchmark): N simulated nodes, two sweeps' figures each
// with 2 % noise and one node in 64 a third slower, scored (lib/cvs/fleet/fleet.hpp) and, separately,
// written out (the text files, the healthy cluster file, fleet.json). Reports the time per fleet
// and per node. The scoring is what runs after every fleet session; the node runs dominate.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "cvs/config/cluster.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/fleet/fleet_pairs.hpp"

namespace {

std::vector<cvs::FleetNode> fleet(std::size_t n) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(1.0, 0.02);
  std::vector<cvs::FleetNode> nodes;
  for (std::size_t i = 0; i < n; ++i) {
    const double slow = i % 64 == 7 ? 0.67 : 1.0;
    cvs::FleetNode node{"gpu" + std::to_string(i), cvs::Outcome::Pass, "", {}, {}, {}, "", {}};
    for (const char* sweep : {"BS=4,PRECISION=BF16", "BS=8,PRECISION=FP8"}) {
      node.figures[{sweep, "tokens_per_sec_per_gpu"}] = 9000 * slow * noise(rng);
      node.figures[{sweep, "step_time_p50_ms"}] = 450 / slow * noise(rng);
      node.figures[{sweep, "final_loss"}] = 2.125;
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

void BM_ScoreFleet(benchmark::State& state) {
  const auto nodes = fleet(static_cast<std::size_t>(state.range(0)));
  std::size_t suspects = 0;
  for (auto _ : state) {
    const auto s = cvs::score_fleet(nodes, {});
    suspects = s.suspects().size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["suspects"] = static_cast<double>(suspects);
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(nodes.size()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ScoreFleet)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_WriteFleetOutputs(benchmark::State& state) {
  const auto nodes = fleet(static_cast<std::size_t>(state.range(0)));
  cvs::Cluster cluster;
  for (const auto& n : nodes) cluster.nodes.push_back({n.name, "10.0.0.1", "", "", 22, "ssh"});
  const auto s = cvs::score_fleet(nodes, {});
  const auto dir = std::filesystem::temp_directory_path() / "cvs-bench-fleet";
  std::filesystem::create_directories(dir);
  const auto hosts = cvs::hosts_by_name(cluster);
  for (auto _ : state) cvs::write_fleet_outputs(dir, s, hosts, {});
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_WriteFleetOutputs)->Arg(1024)->Unit(benchmark::kMillisecond);

// Pairs (lib/cvs/fleet/fleet_pairs.hpp) over N simulated nodes, one in 64 with a slow link: the planning,
// batching and attribution around instant runs (a run's step time from its two nodes' links). Reports
// the pair runs a fleet of N needs (the GPU time pairs cost) and the suspects named.
void BM_LocalisePairs(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.push_back("gpu" + std::to_string(i));
  std::size_t runs = 0, suspects = 0;
  const cvs::PairRunner runner = [&](std::vector<cvs::PairRun>& batch) {
    for (auto& p : batch) {
      ++runs;
      auto slow = [](const std::string& node) { return std::stoul(node.substr(3)) % 64 == 7 ? 400.0 : 0.0; };
      p.status = cvs::Outcome::Pass;
      p.step_ms = 100 + slow(p.a) + slow(p.b);
    }
  };
  for (auto _ : state) {
    runs = 0;
    const auto r = cvs::localise_links(names, runner, 0.25);
    suspects = r.suspects.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["pair_runs"] = static_cast<double>(runs);
  state.counters["suspects"] = static_cast<double>(suspects);
}
BENCHMARK(BM_LocalisePairs)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
