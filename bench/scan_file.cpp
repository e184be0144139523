// The log scanner alone on one file, as `cvs metrics` reads it (scan_log_file):
// error patterns and MaxText event lines found and parsed, the step records handed to a sink that
// counts them (keeping them is the metrics' part). Prints bytes, seconds, MB/s, lines and step
// lines. Used by bench/logscan_compare.sh.
//   scan_file LOG
#include <chrono>
#include <cstdio>

#include "cvs/config/config.hpp"
#include "cvs/logs/logscan.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: scan_file LOG\n");
    return 2;
  }
  struct Count : cvs::RecordSink {
    std::size_t steps = 0;
    void step(const cvs::StepRecord&) override { ++steps; }
    void eval(const cvs::EvalRecord&) override {}
  } count;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = cvs::scan_log_file(argv[1], cvs::default_error_patterns(), &count);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("bytes %llu seconds %.3f MB/s %.1f lines %lld steps %zu errors %zu\n", r.bytes, s,
              static_cast<double>(r.bytes) / 1e6 / s, r.lines, count.steps, r.errors.size());
  return 0;
}
