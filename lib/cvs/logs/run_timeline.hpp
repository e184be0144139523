// Where a run's time went, from its own log, on one clock (the node's, in the log itself: no skew
// with the controller). The node agent writes a line before the training starts and one after it
// exits, in glog's header form ("I1205 17:45:54.019212 cvs-run: started", "... cvs-run: exited 0";
// exec/agent/start_detached.sh); MaxText's lines carry the same header (absl logging): its step
// lines and Orbax's checkpoint I/O durations; with JAX_DEBUG_LOG_MODULES=jax._src.compiler (the
// launcher sets it) JAX's compiler says each compile's seconds and each persistent-cache hit or
// miss. The phases: start-up (process start to the first step, less compile and checkpoint
// restore: imports, JAX and device init, model init, tracing), compile (XLA compiles before the
// first step), training (the first step's start to the last step line, less checkpoint I/O during
// it), checkpoint I/O (Orbax's save and load durations), teardown (the last step line to the exit:
// a final save's wait, interpreter shutdown).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace cvs {

// A line about the run rather than the model: the agent's marks, JAX's compile-cache lines.
enum class RunMarkKind { Started, Exited, CacheHit, CacheMiss, Compiled };
struct RunMark {
  RunMarkKind kind = RunMarkKind::Started;
  std::string name;    // the compiled module ("jit_train_step"): cache and compile lines
  double seconds = 0;  // Compiled: its compile seconds
};

// The needles of those lines (beside maxtext_line_needles()) and their parser: nullopt when the
// line is not one.
inline constexpr const char* kRunMarkNeedles[] = {
    "cvs-run: started", "cvs-run: exited", "Persistent compilation cache hit for '",
    "PERSISTENT COMPILATION CACHE MISS for '", "seconds to compile ("};
std::optional<RunMark> parse_run_mark(std::string_view line);

// The time of the glog/absl header "Lmmdd hh:mm:ss[.ffffff]" that starts the line (after a host
// prefix, at most 64 characters in), in seconds from the start of a non-leap year; nullopt when the
// line has none.
std::optional<double> glog_seconds(std::string_view line);

// What the persistent compilation cache did for a run.
struct CompileCacheUse {
  int hits = 0, misses = 0;
  std::optional<bool> train_step_hit;  // the train step's compile came from the cache
};

struct RunPhases {
  double startup_s = 0, compile_s = 0, training_s = 0, checkpoint_s = 0, teardown_s = 0;
  // The stalls' time over a normal step (statistics/metrics.hpp Stall), carved out of training_s
  // once the run's metrics named them; wall_s: the run on the node's clock, started to exited, which
  // the phases sum to.
  double stall_s = 0, wall_s = 0;
  // JAX named its compiles (the compiler's debug lines): without them compile_s is 0 and the
  // compile is in startup_s.
  bool compile_apart = false;
  CompileCacheUse cache;
  double total() const { return startup_s + compile_s + training_s + stall_s + checkpoint_s + teardown_s; }
  // The stalls' seconds moved from training_s to stall_s (at most all of it).
  void carve_stalls(double seconds);
  // "start-up 4.5 s, compile 0.4 s (the train step from the compile cache), training 1.0 s,
  // checkpoint I/O 0.0 s, teardown 0.9 s"
  std::string words() const;
};

// Phases summed over runs (a session's, a certify tier's), in node-seconds; other_s is the runs'
// wall time their logs leave out (the suite's setup probe, container start and removal, the
// controller between runs).
struct PhaseTotals {
  double startup_s = 0, compile_s = 0, training_s = 0, checkpoint_s = 0, teardown_s = 0, other_s = 0;
  double stall_s = 0;             // the stalls' time (not training)
  int runs = 0;                   // runs with phases
  int train_step_from_cache = 0;  // of them, those whose train step's compile came from the cache
  void add(const RunPhases& p);
  void add(const PhaseTotals& t, double nodes);  // t's figures times `nodes`
  // other_s: what of the runs' `wall_s` the phases leave out (never below 0).
  void set_other(double wall_s) { other_s = std::max(0.0, wall_s - (total_s() - other_s)); }
  double total_s() const {
    return startup_s + compile_s + training_s + stall_s + checkpoint_s + teardown_s + other_s;
  }
  double training_share() const { return total_s() > 0 ? training_s / total_s() : 0; }
  // "training 31 %, start-up 40 %, compile 12 %, checkpoint I/O 2 %, teardown 8 %, other 7 %; the
  // train step from the compile cache in 3 of 5 runs"
  std::string words() const;
};

// Takes a log's timed events in order and says its phases.
class RunTimeline {
 public:
  // A line `at` (glog_seconds) of each kind.
  void mark(const RunMark& m, std::optional<double> at);
  void step(double at, std::optional<double> step_seconds);
  void checkpoint_io(double at, double seconds);  // an Orbax save or load duration
  // nullopt without the agent's started mark (a log the suite's agent did not start).
  std::optional<RunPhases> phases() const;

 private:
  double when(double at) const;  // `at` past a new year after the start
  std::optional<double> started_, exited_, last_at_;
  std::optional<double> first_step_at_, last_step_at_;
  double first_step_seconds_ = 0;
  double compile_before_first_ = 0;
  bool compile_named_ = false;
  // Checkpoint I/O before the first step (restore), between the first and the last step line (seen
  // so far: moved to `during` when a later step line arrives), after it.
  double ckpt_before_ = 0, ckpt_during_ = 0, ckpt_since_last_step_ = 0;
  CompileCacheUse cache_;
};

}  // namespace cvs
