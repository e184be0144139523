// Parsers for the lines MaxText (and Orbax under it) writes to training.log.
// Formats read from MaxText's own source: common/metric_logger.py (step/eval lines),
// common/checkpointing.py (checkpoint lines), utils/max_utils.py (memstats), and Orbax's
// event_tracking.py (checkpoint I/O durations). Old variants are accepted as documented there.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cvs/logs/run_timeline.hpp"

namespace cvs {

// A step series that cannot be trusted as one run (duplicate steps, step numbers going down, a
// metrics_file line that is not JSON): what the logs say cannot be turned into metrics.
class MetricsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StepRecord {
  long long step = 0;
  std::optional<double> seconds;            // absent on profiler boundary lines
  std::optional<double> tflops_per_device;  // absent during batch rampup
  std::optional<double> tokens_per_device;
  std::optional<double> total_weights;
  double loss = 0.0;  // may be NaN/inf: a failure signature, never a number that passes
  // false for a step line of another MaxText version (or another tool) that names no loss: the
  // step still counts (its rates, a NaN among them), its loss is not a figure
  bool loss_logged = true;
  bool rampup = false;
  bool profiler_boundary = false;
  long long line_no = 0;  // its line in the log (or metrics_file); 0 when not read from one
  // Which host's view of the run the line is (a Ray, srun, MPI or kubectl prefix names it; empty
  // for a log of one stream).
  std::string host;
};

// A line that says a step's time may include more than the step: an eval after a step, a
// checkpoint save of a step, a profiler window opening or closing (nsys, the JAX profiler).
enum class MarkerKind { Eval, CheckpointSave, ProfilerStart, ProfilerEnd };
struct StepMarker {
  MarkerKind kind = MarkerKind::Eval;
  long long step = -1;  // the step the line names; -1 for a profiler window's edge
  long long line_no = 0;
};

struct EvalRecord {
  long long after_step = 0;
  double loss = 0.0;
};

enum class CheckpointEventKind { SaveStarted, Saved, Restored, SaveDuration, LoadDuration };

struct CheckpointEvent {
  CheckpointEventKind kind;
  long long step = -1;   // -1 when the line does not name it
  double seconds = 0.0;  // durations only
};

// One recognised line. Exactly one of the optionals is set.
struct LogEvent {
  std::optional<StepRecord> step;
  std::optional<EvalRecord> eval;
  std::optional<CheckpointEvent> checkpoint;
  std::optional<std::string> abort;      // "NaN" / "Inf" from "Aborting training due to X loss."
  std::optional<double> memory_used_gb;  // "Using (GB) X / Y" memstats
  std::optional<double> memory_limit_gb;
  std::optional<std::pair<std::string, std::string>> config_param;  // "Config param KEY: VALUE"
  std::optional<MarkerKind> profiler;  // a profiler window's edge (ProfilerStart / ProfilerEnd)
  std::optional<RunMark> run_mark;     // the agent's marks, JAX's compile lines (run_timeline.hpp)
};

// The host a line's prefix names, from the text before MaxText's own message: Ray's
// "(fn pid=N, ip=A.B.C.D) " -> "A.B.C.D", srun -l's "3: " -> "task 3", Open MPI's
// "[1,3]<stdout>:" -> "rank 3", kubectl --prefix's "[pod/NAME/CONTAINER] " -> "NAME". Empty for
// anything else (a glog header, a shell comment's "# ", a timestamp).
std::string host_of_prefix(std::string_view prefix);

// The needles whose presence makes a line worth parsing (used by the scanner's prefilter).
const std::vector<std::string>& maxtext_line_needles();

// A step line from its "completed step: " on (the scanner knows where its needle matched): the
// fixed-order fast path, else the general parser. nullopt when it is not a step line.
std::optional<StepRecord> parse_step_line(std::string_view from_needle);

// The first figure of a step that is not finite, in the order loss, TFLOP/s/device,
// Tokens/s/device: a NaN/Inf rate is a broken step (a timer or a counter went wrong) as a NaN
// loss is. nullopt when every figure the step has is finite.
struct NonFinite {
  const char* field;
  double value;
};
std::optional<NonFinite> first_nonfinite(const StepRecord& r);

// Parses a line known to hold maxtext_line_needles()[needle] with that needle's parser only.
std::optional<LogEvent> parse_maxtext_event(std::size_t needle, std::string_view line);

// Parses one log line (without its trailing newline). nullopt when it is not a MaxText event.
std::optional<LogEvent> parse_maxtext_line(std::string_view line);

}  // namespace cvs
