// The small POSIX sh programs the launcher runs on each node (through the runtime and the
// transport). Every value travels as a positional parameter ("$1"...), never spliced into the
// script text, so a path or value with spaces or quotes cannot break or inject a command.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cvs::agent {

// Writes `content` to `path` (creating its directory). Fails if the file exists unless overwrite.
std::vector<std::string> write_file(const std::string& path, const std::string& content, bool overwrite);

// Starts argv detached in its own session with stdout+stderr to `log`; records the exit code in
// `rc_file` and the session id in `pid_file`. Refuses (exit 17) when `log` already exists: a new
// run never appends to an old log.
std::vector<std::string> start_detached(const std::string& log, const std::string& rc_file, const std::string& pid_file,
                                        const std::vector<std::string>& argv);

// One round trip per poll: a header line "CVS-POLL <size> <state> [rc]" then up to max_bytes of
// the log after `offset`. state: running | exited <rc> | gone (no process and no exit code).
std::vector<std::string> poll(const std::string& log, const std::string& rc_file, const std::string& pid_file,
                              unsigned long long offset, unsigned long long max_bytes);

struct PollReply {
  long long size = -1;  // -1: the log does not exist yet
  std::string state;    // running | exited | gone
  int exit_code = -1;
  std::string data;     // log bytes after the offset
};
std::optional<PollReply> parse_poll_reply(const std::string& out);

// TERM to the run's whole session, KILL after a grace period.
std::vector<std::string> stop(const std::string& pid_file, int grace_seconds);

// Prints the first existing path of the list (exit 1 when none exists).
std::vector<std::string> first_existing(const std::vector<std::string>& paths);

}  // namespace cvs::agent
