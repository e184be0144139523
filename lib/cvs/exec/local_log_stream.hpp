// The node agent's stream program, done in this process for a run whose log, exit-code and pid
// files are on this host (under Slurm every node's srun step writes its output here): the same
// frames and the same stop rules, without a process per node.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cvs/exec/node_stream.hpp"

namespace cvs {

struct LocalStreamSpec {
  std::string log, rc_file, pid_file;
  unsigned long long offset = 0;  // bytes of the log already delivered
  std::chrono::milliseconds interval{std::chrono::seconds(5)};
  unsigned long long max_bytes = 16u << 20;  // per frame
  int grace_seconds = 10;                    // TERM, then KILL
  std::string telemetry;  // the node's telemetry file ("": none), streamed before each frame
  unsigned long long telemetry_offset = 0;
};

class LocalLogStream {
 public:
  explicit LocalLogStream(LocalStreamSpec spec);
  // The frames due now: one per interval, back to back while frames come out full. The first
  // call yields a frame at once; nothing after the final frame (state not running, log drained).
  std::vector<StreamFrame> poll();
  // The "stop" line: TERM to the run's session now; poll() sends KILL after the grace, writes
  // <pid_file>.stopped (only if the run was alive) and yields the final frame.
  void stop();
  // The controller is leaving: no more frames. The run is left alone.
  void abandon() { ended_ = true; }
  bool ended() const { return ended_; }

 private:
  StreamFrame next_frame();
  std::optional<StreamFrame> telemetry_frame();

  LocalStreamSpec spec_;
  std::chrono::steady_clock::time_point due_{};
  bool ended_ = false;
  bool stopping_ = false, stop_done_ = false, was_alive_ = false;
  int stop_pid_ = 0;
  std::chrono::steady_clock::time_point kill_at_{};
};

}  // namespace cvs
