// The log scanner alone on one file, read in 1 MiB blocks as LogFollower reads a growing log:
// prints bytes, seconds, MB/s, lines and step lines. Used by bench/logscan_compare.sh.
//   scan_file LOG
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "cvs/config.hpp"
#include "cvs/logscan.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: scan_file LOG\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "scan_file: cannot read %s\n", argv[1]);
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  cvs::LogScanner scanner(cvs::default_error_patterns());
  std::string buf(1 << 20, '\0');
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    scanner.feed(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  scanner.finish();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& r = scanner.result();
  std::printf("bytes %llu seconds %.3f MB/s %.1f lines %lld steps %zu errors %zu\n", r.bytes, s,
              static_cast<double>(r.bytes) / 1e6 / s, r.lines, r.steps.size(), r.errors.size());
  return 0;
}
