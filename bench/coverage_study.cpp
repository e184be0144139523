// Prints the coverage study's table (tests/support/coverage_study.hpp) as Markdown: per noise
// and steady-state length, how often the shipped 95 % interval of the mean step time and of
// tokens/s held the true value, and how often an interval was given at all.
//   coverage_study [REPS] [--before]   (default 4000 replications; --before: the pre-#27 procedure)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "coverage_study.hpp"

int main(int argc, char** argv) {
  namespace st = cvs::study;
  std::size_t reps = 4000;
  auto est = st::Estimator::Shipped;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--before") == 0)
      est = st::Estimator::Mser5SqrtBatches;
    else
      reps = static_cast<std::size_t>(std::strtoul(argv[i], nullptr, 10));
  }
  std::vector<st::CellResult> cells;
  for (auto noise : st::all_noises())
    for (auto n : st::study_lengths()) cells.push_back(st::run_cell(noise, n, reps, 1, est));
  bool all_ok = true;
  for (const bool time : {true, false}) {
    std::printf(
        "\n`%s`, %zu replications per cell: coverage of the 95 %% interval (share of runs given one)\n\n",
        time ? "step_time_mean_ms" : "tokens_per_sec_per_gpu", reps);
    std::printf("| noise |");
    for (auto n : st::study_lengths()) std::printf(" n = %zu |", n);
    std::printf("\n|---|");
    for (std::size_t i = 0; i < st::study_lengths().size(); ++i) std::printf("---|");
    std::size_t k = 0;
    for (auto noise : st::all_noises()) {
      std::printf("\n| %s |", st::to_string(noise));
      for (std::size_t j = 0; j < st::study_lengths().size(); ++j, ++k) {
        const auto v = st::judge(time ? cells[k].step_time : cells[k].tokens, reps);
        all_ok &= v.ok;
        std::printf(" %s%s |", v.text.c_str(), v.ok ? "" : " **out of band**");
      }
    }
    std::printf("\n");
  }
  std::printf("\n%s\n", all_ok ? "every cell 93-98 % or INCONCLUSIVE" : "some cell is out of band");
  return all_ok ? 0 : 1;
}
