// Running local processes: one, or many concurrently (Boost.Process + Boost.Asio), each with
// its own stdout/stderr/exit code and a hard timeout. Argument vectors only: no shell.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace cvs {

struct ProcRequest {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when not a path
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::string label;                   // e.g. the node name, carried into the result
  std::size_t max_output = 64u << 20;  // bytes kept per stream; the rest is dropped and flagged
};

struct ProcResult {
  std::string label;
  int exit_code = -1;  // -1 when it did not exit normally (signal, spawn failure, timeout)
  std::string out;
  std::string err;
  bool timed_out = false;
  bool truncated = false;
  std::string spawn_error;  // non-empty when the program could not be started
  double seconds = 0.0;
  bool ok() const { return exit_code == 0 && !timed_out && spawn_error.empty(); }
  // "label: exit 3: <last stderr line>" style summary for messages.
  std::string describe() const;
};

// The executable argv[0] names (looked up on PATH when it has no '/'); empty, with `error` set,
// when there is none.
std::string find_program(const std::vector<std::string>& argv, std::string& error);

// Runs every request concurrently (at most max_in_flight at once) and returns results in
// request order. Never throws for a failing command: failures are data in ProcResult.
// interrupt: when it becomes true (a Ctrl-C), every running child's process group gets SIGINT
// once and the requests not started yet are not (spawn_error "not started: interrupted").
std::vector<ProcResult> run_all(const std::vector<ProcRequest>& requests, std::size_t max_in_flight = 256,
                                const std::atomic<bool>* interrupt = nullptr);
ProcResult run_one(const ProcRequest& request);

// Raises the soft open-files limit to the hard limit (fan-out to many nodes needs descriptors).
void raise_fd_limit();

// POSIX shell quoting of one word (for the one place a vector must cross ssh as a string).
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace cvs
