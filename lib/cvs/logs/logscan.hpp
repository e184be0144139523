// Incremental scanning of a growing training.log: error_patterns and MaxText events in one
// pass over each new chunk, resuming from a byte offset and holding back a partial last line.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cvs/config/config.hpp"
#include "cvs/logs/maxtext_log.hpp"

namespace cvs {

struct ErrorMatch {
  std::string pattern_name;
  std::string line;       // the matched line (trimmed to 1000 chars)
  long long line_no = 0;  // 1-based
};

struct ScanResult {
  std::vector<StepRecord> steps;
  std::vector<EvalRecord> evals;
  std::vector<CheckpointEvent> checkpoints;
  // Checkpoint saves and profiler windows, in log order, with their lines: which step records may
  // include more than a step (the metrics' rule for records that are not steps' times).
  std::vector<StepMarker> markers;
  std::vector<ErrorMatch> errors;    // in log order, at most kMaxErrors kept
  std::optional<std::string> abort;  // "NaN"/"Inf" when MaxText aborted on a non-finite loss
  std::optional<double> peak_memory_gb;
  std::optional<double> memory_limit_gb;
  std::map<std::string, std::string> effective_config;  // MaxText's "Config param" lines
  RunTimeline timeline;  // the run's timed lines: its phases (run_timeline.hpp)
  // A whole file's last line, without its newline, that names fewer fields than the step lines
  // before it ("... loss: 5.9" where the others go on "lm_loss: ..., perplexity: ..."): cut
  // mid-write, so left out (its numbers may be cut too); "" when none.
  std::string cut_last_line;
  long long lines = 0;
  unsigned long long bytes = 0;
  static constexpr std::size_t kMaxErrors = 20;

  const ErrorMatch* first_error() const { return errors.empty() ? nullptr : &errors.front(); }
  // The note that says cut_last_line was left out, naming `log`; "" when none was.
  std::string cut_last_line_note(const std::string& log) const;
};

// Takes a scanner's step records as they are parsed, in log order, evals among them, instead of
// its result keeping every step (the result keeps the evals and everything else): what `cvs
// metrics` streams a multi-GB log through.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void step(const StepRecord& r) = 0;
  // The scanner hands its own records over with this one: a sink that keeps them may move them.
  virtual void step(StepRecord&& r) { step(static_cast<const StepRecord&>(r)); }
  virtual void eval(const EvalRecord& e) = 0;
  virtual void marker(const StepMarker&) {}
};

class LogScanner {
 public:
  explicit LogScanner(const std::vector<ErrorPattern>& patterns);
  // Step records go to `sink` (not kept by the scanner) from now on; nullptr: kept again.
  void set_sink(RecordSink* sink) { sink_ = sink; }
  ~LogScanner();
  LogScanner(LogScanner&&) noexcept;
  LogScanner& operator=(LogScanner&&) noexcept;

  // Feeds the next bytes of the log. Complete lines are processed; a trailing partial line is
  // kept until its newline arrives (or finish()).
  void feed(std::string_view data);
  // The writer is done: a final line that has no newline is searched for error patterns but not
  // parsed for MaxText events (a line cut mid-write would give a wrong value), unless the caller
  // reads a finished file whose last line simply has no newline (parse_last_line).
  void finish(bool parse_last_line = false);
  const ScanResult& result() const { return result_; }
  // Moves the result out (the scanner is done with it).
  ScanResult take_result() { return std::move(result_); }

 private:
  void process(std::string_view complete_lines, bool events = true);
  void record(LogEvent&& ev, long long line_no);
  void take_step(StepRecord&& r);  // to the sink, or kept
  // A line of a chunk with at least one match: an error candidate, and/or the MaxText event
  // needle (index, offset in the line) that matched first.
  struct HitLine {
    std::string_view text;
    bool error = false;
    long event = -1;
    std::size_t event_at = 0;
  };
  void collect_hits(std::string_view chunk);
  void on_hit_line(const HitLine& h, long long line_no, bool events);
  // A MaxText event line whose needle (maxtext_line_needles()[needle]) matched at `at`.
  void on_event(std::string_view line, std::size_t needle, std::size_t at, long long line_no);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pending_;
  // The last step line that parsed, from its "completed step: " on: finish() counts its fields
  // (a copy per step line costs less than counting them on each).
  std::string last_step_line_;
  ScanResult result_;
  RecordSink* sink_ = nullptr;
};

// Follows one log file on disk: each poll() reads what was appended since the last one.
class LogFollower {
 public:
  LogFollower(std::filesystem::path path, const std::vector<ErrorPattern>& patterns);
  // Returns the number of new bytes read. Throws std::runtime_error if the file shrank (it was
  // truncated or replaced: a blended or restarted log is never read as one run).
  std::size_t poll();
  void finish() { scanner_.finish(); }
  const ScanResult& result() const { return scanner_.result(); }
  ScanResult take_result() { return scanner_.take_result(); }
  const std::filesystem::path& path() const { return path_; }
  unsigned long long offset() const { return offset_; }

 private:
  std::filesystem::path path_;
  unsigned long long offset_ = 0;
  LogScanner scanner_;
};

// Scans a whole file at once (for `cvs metrics` and tests); with a sink, the steps go there.
ScanResult scan_log_file(const std::filesystem::path& path, const std::vector<ErrorPattern>& patterns,
                         RecordSink* sink = nullptr);

}  // namespace cvs
