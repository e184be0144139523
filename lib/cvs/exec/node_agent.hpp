// The small POSIX sh programs the launcher runs on each node (through the runtime and the
// transport). Every value travels as a positional parameter ("$1"...), never spliced into the
// script text, so a path or value with spaces or quotes cannot break or inject a command.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cvs::agent {

// The warm trainer's numbers, defined here alone: its programs (warm_trainer.py, warm_start.py)
// take them as arguments. A trainer ends after kWarmTrainerIdleSeconds without a training (a
// certification's scope outlives its sessions by that much at most). if_warm_capable exits
// kExitNotWarmCapable for a python that cannot serve; a warm start exits kExitWarmTrainerEnded
// when the trainer ended while its training ran (the trainer killed: the OOM killer picks the
// process that holds MaxText imported), after a line that says so and the training's own exit
// code (75: sysexits' EX_TEMPFAIL, the infrastructure's, never MaxText's).
inline constexpr int kWarmTrainerIdleSeconds = 900;
inline constexpr int kExitNotWarmCapable = 19;
inline constexpr int kExitWarmTrainerEnded = 75;
inline constexpr const char* kWarmTrainerEndedLine =
    "cvs-warm: the warm trainer ended while the training ran";

// Writes `content` to `path` (creating its directory). Fails if the file exists unless overwrite.
std::vector<std::string> write_file(const std::string& path, const std::string& content, bool overwrite);

// Starts argv detached in its own session with stdout+stderr to `log`; records the exit code in
// `rc_file` and the session id in `pid_file`. Refuses (exit 17) when `log` already exists: a new
// run never appends to an old log. With `file` set, first writes file->path (as write_file,
// never overwriting): the run's config and its start in one process per node.
struct FileToWrite {
  std::string path, content;
};
std::vector<std::string> start_detached(const std::string& log, const std::string& rc_file,
                                        const std::string& pid_file, const std::vector<std::string>& argv,
                                        const std::optional<FileToWrite>& file = std::nullopt);

// The log stream of one node: a long-lived program that pushes, every `interval_s`, one frame
// "CVS-FRAME <size> <n> <state>\n" followed by exactly n bytes of the log after what it already
// sent (n <= max_bytes; a full frame is followed at once by the next). state: running |
// exited <rc> | gone (no process and no exit code) | stopped (stopped on request). The state is
// read before the size, so the frame that reports the exit carries every byte written before it;
// the program exits after the first frame that is not "running" and leaves nothing unsent.
// A line "stop" on its standard input stops the run (TERM to its session, KILL after
// grace_seconds) and the final frame follows at once; a run that was already dead when the stop
// came keeps its own state (gone or exited), so the cause is not hidden by the stop. End of
// input means the controller is gone and ends the stream, never the run.
// With a telemetry file, each interval also sends "CVS-TELEMETRY <n>\n" and the n bytes of it
// after what was sent (from telemetry_offset), before the log frame.
std::vector<std::string> stream(const std::string& log, const std::string& rc_file,
                                const std::string& pid_file, unsigned long long offset, double interval_s,
                                unsigned long long max_bytes, int grace_seconds,
                                const std::string& telemetry_file = "",
                                unsigned long long telemetry_offset = 0);

// argv run with the telemetry sampler beside it (telemetry.sh, every interval_s, appending to
// `out`), exiting with argv's exit code after the sampler's last sample. With warm_pid_file, argv
// is a warm start (below) that writes there the pid of the training it stands for: the sampler
// takes that process's CPU time and counts its GPU processes as the training's.
std::vector<std::string> with_telemetry(const std::string& out, double interval_s, const std::string& log,
                                        const std::vector<std::string>& argv,
                                        const std::string& warm_pid_file = "");

// The warm trainer of a node (warm_trainer.py, run by `python -c`): imports `script` (MaxText's
// train.py and all it imports) once, then serves trainings forked from it on the abstract unix
// socket @name (this user only) until idle_s seconds pass without one. Started detached with the
// training's environment; a request in another environment, python or script is refused, but for
// the variables named in per_training (read when a training initialises: its rank, the node
// count, the coordinator), which are each request's own in its training.
std::vector<std::string> warm_trainer(const std::string& python, const std::string& name,
                                      const std::string& script, double idle_s,
                                      const std::vector<std::string>& per_training = {});
// `argv` unless the run whose pid file is pid_file is alive: then prints "running <pid>", exit 0
// (a certification's warm trainer that an earlier session on the node started).
std::vector<std::string> unless_running(const std::string& pid_file, const std::vector<std::string>& argv);
// `argv` where `python` is a Python that passes descriptors (3.9+, what the warm trainer needs);
// else exit kExitNotWarmCapable (a train_params.python that is a shell, as a test trainer's, or an old
// Python).
std::vector<std::string> if_warm_capable(const std::string& python, const std::vector<std::string>& argv);
// `argv` (python script args: a training) as a process forked from the warm trainer @name
// (warm_start.py): this process stands for it (its exit code, signals passed on, killed it takes
// the training along) and writes its pid to pid_out. Should the trainer end while the training
// runs, the training (orphaned, running on) leaves its exit code in <pid_out>.exit and the warm
// start, when it ends, prints kWarmTrainerEndedLine with that code and exits
// kExitWarmTrainerEnded. It waits while the trainer whose pid file is
// trainer_pid_file still imports; with the trainer gone or refusing, it execs argv itself (a cold
// start, one line in the log says why).
std::vector<std::string> warm_start(const std::string& python, const std::string& name,
                                    const std::string& trainer_pid_file, const std::string& pid_out,
                                    const std::vector<std::string>& argv);
// How a warm start's output says it ran: forked from the trainer, or cold and why (its
// `cvs-warm: cold start: <why>` line); neither for output without a warm start's line.
struct WarmStartSeen {
  bool forked = false;
  std::optional<std::string> cold;
};
WarmStartSeen warm_start_seen(const std::string& out);

// TERM to the run's whole session, KILL after a grace period. pid_file a folder: every run whose
// pid file is <folder>/*/pid, signalled at once.
std::vector<std::string> stop(const std::string& pid_file, int grace_seconds);

// Waits until every warm trainer whose pid file is <dir>/*/pid serves (its socket @<prefix><its
// folder's name>) or has ended; after limit_s seconds with one still importing, exit 1 naming it.
std::vector<std::string> await_warm(const std::string& dir, const std::string& prefix, int limit_s);

// Prints the first existing path of the list (exit 1 when none exists).
std::vector<std::string> first_existing(const std::vector<std::string>& paths);

}  // namespace cvs::agent
