// One node of a run as the run monitor (run_monitor.cpp) follows it: its files, what its stream
// has delivered, and what is wrong with it.
#pragma once

#include <fstream>
#include <memory>
#include <string>

#include "cvs/exec/launch.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/logs/telemetry.hpp"

namespace cvs {

// The last n lines of `text` (its trailing line ends dropped): what a failed command ended with.
std::string last_lines(const std::string& text, std::size_t n);

// One node of a run: where its files are, what its stream has delivered, and what is wrong with it.
struct NodeTracker {
  std::string log, rc, pid, yaml;  // on the node (yaml: the MaxText YAML of this rank)
  std::unique_ptr<std::ofstream> copy;
  std::unique_ptr<LogScanner> scanner;
  unsigned long long offset = 0;  // log bytes received
  bool final_frame = false;       // the stream sent its last frame (state not running), or is lost
  int restarts = 0;               // streams restarted after a dropped connection
  double next_restart_s = 0;
  std::string lost;  // why the node counts as unreachable
  std::size_t nan_checked = 0;
  std::string nan_seen;  // a non-finite loss or rate, once seen
  // The node's telemetry (telemetry.log beside the log; "" when off), what its stream delivered,
  // and whether a kernel line failed the run (which one, and its GPU, is read when the verdict is
  // worded: a later line of its incident may name the GPU or make it another GPU's context).
  std::string telemetry_file;
  unsigned long long telemetry_offset = 0;
  TelemetryParser telemetry;
  bool kernel_failed = false;
  std::string kernel_failure(const std::string& node) const;
  // After a deliberate early stop: the log lines scanned when it was sent. An error line after
  // them is the stop's doing (a peer of the stopped head reports the coordination service gone:
  // "TF coordination error"), not the workload's.
  long long lines_at_stop = -1;

  // The first error pattern that counts (one before an early stop's lines, when there was one).
  const ErrorMatch* counted_error() const {
    const auto* e = scanner->result().first_error();
    return e && (lines_at_stop < 0 || e->line_no <= lines_at_stop) ? e : nullptr;
  }
  // A step's non-finite loss or rate, each step looked at once.
  const std::string& check_finite(const std::string& node);
  // The node's own end, when it is one: gone, stopped from outside, a non-zero exit, the warm
  // trainer's end.
  std::string death(const NodeOutcome& no, bool stop_sent) const;
  // The warm start's line when the warm trainer ended while the training ran (its exit code and
  // that line at the log's end: the infrastructure's end, not the workload's), else "".
  std::string warm_trainer_end(const NodeOutcome& no) const;
  bool workload_failed(const NodeOutcome& no) const {
    const auto& sr = scanner->result();
    return counted_error() || sr.abort || !nan_seen.empty() || kernel_failed ||
           (no.state == NodeState::Exited && no.exit_code != 0 && warm_trainer_end(no).empty());
  }
};

}  // namespace cvs
