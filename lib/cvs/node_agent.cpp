#include "cvs/node_agent.hpp"

#include <cstdio>
#include <cstdlib>

namespace cvs::agent {
namespace {
// alive PID: the process exists and is not a zombie (an init that does not reap, as in some
// sandboxes and containers, leaves killed processes as zombies that `kill -0` still finds).
// Shell builtins only: the stream runs it every interval on every node.
constexpr const char* kAlive =
    "alive() { [ -r \"/proc/$1/status\" ] || return 1; { while read -r k v; do if [ \"$k\" = State: ]; then "
    "case $v in Z*) return 1;; esac; return 0; fi; done < \"/proc/$1/status\"; } 2>/dev/null; }; ";
// p=<the run's session id from the pid file>, 0 when missing or not a number.
constexpr const char* kRunPid =
    "run_pid() { p=; if [ -f \"$pidf\" ]; then read -r p < \"$pidf\"; fi; case $p in ''|*[!0-9]*) p=0;; "
    "esac; }; ";
}  // namespace

std::vector<std::string> write_file(const std::string& path, const std::string& content, bool overwrite) {
  return {"sh",
          "-c",
          "p=$1; if [ \"$3\" != 1 ] && [ -e \"$p\" ]; then echo \"cvs: refusing to overwrite $p\" >&2; exit "
          "17; fi; "
          "d=${p%/*}; mkdir -p \"${d:-/}\" && printf '%s' \"$2\" > \"$p\"",
          "cvs-write",
          path,
          content,
          overwrite ? "1" : "0"};
}

std::vector<std::string> start_detached(const std::string& log, const std::string& rc_file,
                                        const std::string& pid_file, const std::vector<std::string>& argv,
                                        const std::optional<FileToWrite>& file) {
  std::vector<std::string> v = {
      "sh",
      "-c",
      "log=$1; rcf=$2; pidf=$3; f=$4; fc=$5; shift 5; "
      "if [ -e \"$log\" ]; then echo \"cvs: refusing to append to existing log $log\" >&2; exit 17; fi; "
      "if [ -n \"$f\" ]; then if [ -e \"$f\" ]; then echo \"cvs: refusing to overwrite $f\" >&2; exit 17; "
      "fi; "
      "d=${f%/*}; mkdir -p \"${d:-/}\" && printf '%s' \"$fc\" > \"$f\" || exit 18; fi; "
      "a=${log%/*}; b=${rcf%/*}; c=${pidf%/*}; mkdir -p \"${a:-/}\" \"${b:-/}\" \"${c:-/}\" || exit 18; "
      "rm -f \"$rcf\"; "
      "setsid sh -c 'rcf=$1; shift; \"$@\"; echo $? > \"$rcf\"' cvs-run \"$rcf\" \"$@\" > \"$log\" 2>&1 < "
      "/dev/null & "
      "echo $! > \"$pidf\"; echo $!",
      "cvs-start",
      log,
      rc_file,
      pid_file,
      file ? file->path : "",
      file ? file->content : ""};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

std::vector<std::string> stream(const std::string& log, const std::string& rc_file,
                                const std::string& pid_file, unsigned long long offset, double interval_s,
                                unsigned long long max_bytes, int grace_seconds) {
  char iv[32];
  std::snprintf(iv, sizeof iv, "%.3f", interval_s);
  // Per interval it runs stat, head (when there is news) and sleep; everything else is builtin.
  return {
      "sh",
      "-c",
      std::string(kAlive) + kRunPid +
          "log=$1; rcf=$2; pidf=$3; off=$4; iv=$5; max=$6; grace=$7; opened=0; exec 4<&0; "
          // The stop reader: a background list reads the controller's lines from fd 4 (its
          // own stdin is /dev/null by POSIX rule), stops the run, and wakes the main loop
          // (USR1 ends its wait) for the final frame. End of input: the controller is gone.
          "( while read -r cmd <&4; do case $cmd in stop) : > \"$pidf.stopping\"; run_pid; a=0; "
          "if [ \"$p\" -gt 1 ]; then if alive \"$p\"; then a=1; fi; "
          "if kill -TERM \"-$p\" 2>/dev/null; then i=0; "
          "while alive \"$p\" && [ $i -lt $((grace * 5)) ]; do sleep 0.2 </dev/null >/dev/null 2>&1 4<&-; "
          "i=$((i + 1)); done; "
          "kill -KILL \"-$p\" 2>/dev/null; fi; fi; "
          // Only a run that was alive is "stopped"; one already dead stays gone (or exited).
          "if [ $a = 1 ]; then : > \"$pidf.stopped\"; else rm -f \"$pidf.stopping\"; fi; kill -USR1 $$;; "
          "esac; done; "
          "kill $$ 2>/dev/null ) & "
          // A signal ends the loop through EXIT, which takes the reader along: never a reader left
          // holding the stream open without its loop.
          "rpid=$!; trap 'kill $rpid 2>/dev/null' EXIT; trap 'exit 1' INT TERM HUP; woke=0; trap 'woke=1' "
          "USR1; "
          "while :; do "
          "if [ -s \"$rcf\" ]; then read -r rc < \"$rcf\"; st=\"exited $rc\"; "
          "elif [ -e \"$pidf.stopped\" ]; then st=stopped; "
          "elif [ -e \"$pidf.stopping\" ]; then st=running; "
          "else run_pid; if [ \"$p\" -gt 1 ] && alive \"$p\"; then st=running; "
          "elif [ -f \"$rcf\" ]; then st=running; else st=gone; fi; fi; "
          "size=$(stat -c %s \"$log\" 2>/dev/null || echo -1); n=0; "
          "if [ \"$size\" -gt \"$off\" ]; then n=$((size - off)); fi; if [ \"$n\" -gt \"$max\" ]; then "
          "n=$max; fi; "
          "printf 'CVS-FRAME %s %s %s\\n' \"$size\" \"$n\" \"$st\" || exit 0; "
          // fd 3 stays open on the log: each head continues where the last one stopped.
          "if [ \"$n\" -gt 0 ]; then if [ $opened = 0 ]; then exec 3< \"$log\"; opened=1; "
          "if [ \"$off\" -gt 0 ]; then head -c \"$off\" <&3 > /dev/null; fi; fi; "
          "head -c \"$n\" <&3; off=$((off + n)); fi; "
          "case $st in running) ;; *) if [ \"$off\" -ge \"$size\" ]; then exit 0; fi;; esac; "
          // A USR1 that came while busy skips the sleep; one that comes during it ends the wait.
          // The sleeps hold none of the stream's pipes or files: the stream ends when its loop does.
          "if [ \"$n\" -lt \"$max\" ] && [ $woke = 0 ]; then sleep \"$iv\" </dev/null >/dev/null 2>&1 3<&- "
          "4<&- & s=$!; "
          "[ $woke = 0 ] && wait $s; "
          "kill $s 2>/dev/null; fi; "
          "woke=0; "
          "done",
      "cvs-stream",
      log,
      rc_file,
      pid_file,
      std::to_string(offset),
      iv,
      std::to_string(max_bytes),
      std::to_string(grace_seconds)};
}

std::vector<std::string> stop(const std::string& pid_file, int grace_seconds) {
  return {"sh",
          "-c",
          std::string(kAlive) +
              "pidf=$1; grace=$2; [ -f \"$pidf\" ] || exit 0; p=$(cat \"$pidf\"); "
              "case \"$p\" in ''|*[!0-9]*) echo \"cvs: bad pid file $pidf\" >&2; exit 1;; esac; "
              "[ \"$p\" -gt 1 ] || { echo \"cvs: refusing to signal process group $p\" >&2; exit 1; }; "
              "kill -TERM \"-$p\" 2>/dev/null || exit 0; i=0; "
              "while alive \"$p\" && [ $i -lt $((grace * 5)) ]; do sleep 0.2; i=$((i + 1)); done; "
              "kill -KILL \"-$p\" 2>/dev/null; exit 0",
          "cvs-stop",
          pid_file,
          std::to_string(grace_seconds)};
}

std::vector<std::string> first_existing(const std::vector<std::string>& paths) {
  std::vector<std::string> v = {
      "sh", "-c", "for p in \"$@\"; do if [ -f \"$p\" ]; then echo \"$p\"; exit 0; fi; done; exit 1",
      "cvs-first"};
  v.insert(v.end(), paths.begin(), paths.end());
  return v;
}

}  // namespace cvs::agent
