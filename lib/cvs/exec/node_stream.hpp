// Persistent node streams: one long-lived process per node (the node agent's stream program,
// run through the runtime and the transport) pushes that node's log and training state; every
// stream is read on one Asio event loop. A poll therefore costs no process spawn and no round
// trip per node, and a stop is one line written to each stream's standard input.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cvs/exec/process.hpp"

#include "cvs/catalog/node_state.hpp"

namespace cvs {

struct LocalStreamSpec;  // local_log_stream.hpp

// A frame header's state word; nullopt for anything else.
std::optional<NodeState> frame_state(std::string_view word);

// One frame of a stream: "CVS-FRAME <size> <n> <state>\n" then exactly n log bytes; or
// "CVS-TELEMETRY <n>\n" then n bytes of the node's telemetry (telemetry = true, no state).
struct StreamFrame {
  long long size = -1;  // the log's size when the frame was cut; -1: no log yet
  NodeState state = NodeState::Running;
  int exit_code = -1;      // with "exited"
  std::string data;        // the log (or telemetry) bytes that follow what earlier frames carried
  bool telemetry = false;  // a telemetry frame: data is the sampler's, the state says nothing
};

// Cuts a byte stream into frames; bytes may arrive split anywhere.
class FrameParser {
 public:
  std::vector<StreamFrame> feed(std::string_view bytes);
  // Non-empty once the stream broke its framing (then feed() returns nothing more).
  const std::string& error() const { return error_; }

 private:
  std::string buf_;
  std::optional<StreamFrame> open_;  // header read, data still arriving
  std::size_t need_ = 0;
  std::string error_;
};

// What one stream delivered since the previous collect().
struct StreamUpdate {
  std::vector<StreamFrame> frames;
  bool ended = false;         // the process exited and its output is drained
  int exit_code = -1;         // of the stream process, once ended
  std::string spawn_error;    // the stream process could not be started
  std::string err_tail;       // the last lines of its standard error (ssh, runtime messages)
  std::string framing_error;  // from FrameParser
  double silent_s = 0;        // seconds since its last frame
};

class StreamSet {
 public:
  // Buffered-but-uncollected bytes per stream above which its pipe is left unread (backpressure).
  explicit StreamSet(std::size_t max_pending_bytes = 64u << 20);
  ~StreamSet();  // closes every stream's input and kills what still runs
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  // Starts a stream (argv as in ProcRequest; label names it in messages); returns its index.
  std::size_t add(const ProcRequest& request);
  // Follows a log on this host in this process instead (LocalLogStream): same frames, same
  // "stop", no process.
  std::size_t add_local(const LocalStreamSpec& spec);
  // Replaces stream i by a new process (a stream that died, restarted from a later offset).
  void restart(std::size_t i, const ProcRequest& request);
  // Writes one line to stream i's standard input; false when it is gone.
  bool send(std::size_t i, const std::string& line);
  // Closes stream i's standard input (its stream program ends).
  void close_input(std::size_t i);
  // Runs the event loop for up to `wait` (less once every stream has ended) and returns what
  // each stream delivered meanwhile, in add() order.
  std::vector<StreamUpdate> collect(std::chrono::milliseconds wait);
  bool ended(std::size_t i) const;
  std::size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cvs
