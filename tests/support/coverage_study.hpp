// The coverage study: does a stated 95 % interval hold the true figure 95 % of the time?
//
// Simulated MaxText runs with a known true mean step time and throughput: a compile step, an
// irregular step 1, a three-step warm-up (2x, 1.5x, 1.2x), then n steady steps whose true mean
// is drawn in 8-20 ms and whose noise (coefficient of variation log-uniform in 0.5-8 %) is iid,
// AR(1) with phi 0.3 / 0.6 / 0.9, or heavy-tailed (10 % of steps take 3x: a stalling input
// pipeline). Every figure is printed as MaxText prints it (3 decimals: seconds, TFLOP/s/device,
// Tokens/s/device), parsed back as step records and measured by the shipped steady_state(). A
// cell counts, per metric, how often an interval was given and how often it held the truth.
//
// Deterministic (fixed seeds, no clock): the unit test asserts every cell, the bench prints the
// table the README shows. `Estimator::Mser5SqrtBatches` is the procedure before #27 (MSER-5,
// floor(sqrt n) batches of the printed seconds, throughput as work over time per batch), kept
// here only so the test can show that it fails the study.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cvs::study {

enum class Noise { Iid, Ar03, Ar06, Ar09, Heavy };
const std::vector<Noise>& all_noises();
const char* to_string(Noise n);
const std::vector<std::size_t>& study_lengths();  // steady steps: 12, 20, 30, 60, 120, 500

enum class Estimator { Shipped, Mser5SqrtBatches };

struct Tally {
  std::size_t decided = 0, covered = 0;
};

struct CellResult {
  Noise noise;
  std::size_t n = 0, reps = 0;
  Tally step_time, tokens;  // step_time_mean_ms and tokens_per_sec_per_gpu
};

CellResult run_cell(Noise noise, std::size_t n, std::size_t reps, std::uint64_t seed,
                    Estimator estimator = Estimator::Shipped);

// A cell's verdict for one metric. Every run ends with an interval that holds the truth, or with
// none (INCONCLUSIVE, with the reason): an interval that misses is what must stay rare, so
//  - at most 7 % of all runs end with an interval that misses (covered or INCONCLUSIVE in >= 93 %),
//  - and where at least half the runs get an interval, it holds the truth in 93-98 % of them (its
//    stated 95 % is what it delivers: neither optimistic nor uselessly wide).
// Where fewer than half get one, the cell reads INCONCLUSIVE: too few steps for what the series
// is, as the gates say.
struct CellVerdict {
  bool inconclusive = false;
  bool ok = false;
  double coverage = 0, decided = 0, missed = 0;  // fractions: of the intervals, of all runs, of all runs
  std::string text;  // "95.6 % (87 % given, 3.8 % missed)" or "INCONCLUSIVE (32 % given, 2.1 % missed)"
};
CellVerdict judge(const Tally& t, std::size_t reps);

}  // namespace cvs::study
