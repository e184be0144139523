// Throughput of the log scanner on real MaxText output: the error_patterns DFA pass plus the
// MaxText event pass (step lines, checkpoints, config params) over large training.log text.
// The input is the captured CPU run logs repeated to the requested size (real lines only).
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "cvs/config/config.hpp"
#include "cvs/logs/logscan.hpp"

namespace {

std::string corpus(std::size_t bytes) {
  std::string unit;
  for (const char* f :
       {"/logs/cpu_ckpt_phase2.log", "/logs/cpu_2proc_rank0.log", "/logs/cpu_tiny_12steps.log"}) {
    std::ifstream in(std::string(CVS_TEST_DATA) + f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    unit += ss.str();
  }
  std::string out;
  out.reserve(bytes + unit.size());
  while (out.size() < bytes) out += unit;
  return out;
}

void BM_ScanChunks(benchmark::State& state) {
  static const std::string text = corpus(64u << 20);
  const std::size_t chunk = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    cvs::LogScanner s(cvs::default_error_patterns());
    for (std::size_t pos = 0; pos < text.size(); pos += chunk)
      s.feed(std::string_view(text).substr(pos, chunk));
    s.finish();
    benchmark::DoNotOptimize(s.result().steps.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ScanChunks)->Arg(64 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_ParseStepLine(benchmark::State& state) {
  const std::string line =
      "I1202 12:31:44.806634 140709024938880 metric_logger.py:265] completed step: 2, seconds: 0.004, "
      "TFLOP/s/device: "
      "0.149, Tokens/s/device: 63147.509, total_weights: 256, loss: 6.015, lm_loss: 6.015, perplexity: "
      "409.336";
  for (auto _ : state) benchmark::DoNotOptimize(cvs::parse_maxtext_line(line));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(line.size()));
}
BENCHMARK(BM_ParseStepLine);

}  // namespace

BENCHMARK_MAIN();
