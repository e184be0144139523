#include "cvs/node_agent.hpp"

#include <cstdlib>

namespace cvs::agent {
namespace {
// alive PID: the process exists and is not a zombie (an init that does not reap, as in some
// sandboxes and containers, leaves killed processes as zombies that `kill -0` still finds).
constexpr const char* kAlive =
    "alive() { [ -r \"/proc/$1/status\" ] || return 1; ! grep -q '^State:[[:space:]]*Z' \"/proc/$1/status\"; }; ";
}  // namespace

std::vector<std::string> write_file(const std::string& path, const std::string& content, bool overwrite) {
  return {"sh", "-c",
          "p=$1; if [ \"$3\" != 1 ] && [ -e \"$p\" ]; then echo \"cvs: refusing to overwrite $p\" >&2; exit 17; fi; "
          "mkdir -p \"$(dirname \"$p\")\" && printf '%s' \"$2\" > \"$p\"",
          "cvs-write", path, content, overwrite ? "1" : "0"};
}

std::vector<std::string> start_detached(const std::string& log, const std::string& rc_file, const std::string& pid_file,
                                        const std::vector<std::string>& argv) {
  std::vector<std::string> v = {
      "sh", "-c",
      "log=$1; rcf=$2; pidf=$3; shift 3; "
      "if [ -e \"$log\" ]; then echo \"cvs: refusing to append to existing log $log\" >&2; exit 17; fi; "
      "mkdir -p \"$(dirname \"$log\")\" \"$(dirname \"$rcf\")\" \"$(dirname \"$pidf\")\" || exit 18; "
      "rm -f \"$rcf\"; "
      "setsid sh -c 'rcf=$1; shift; \"$@\"; echo $? > \"$rcf\"' cvs-run \"$rcf\" \"$@\" > \"$log\" 2>&1 < /dev/null & "
      "echo $! > \"$pidf\"; echo $!",
      "cvs-start", log, rc_file, pid_file};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

std::vector<std::string> poll(const std::string& log, const std::string& rc_file, const std::string& pid_file,
                              unsigned long long offset, unsigned long long max_bytes) {
  return {"sh", "-c",
          std::string(kAlive) + "log=$1; rcf=$2; pidf=$3; off=$4; max=$5; "
          "if [ -s \"$rcf\" ]; then st=\"exited $(cat \"$rcf\")\"; "
          "elif [ -f \"$pidf\" ] && alive \"$(cat \"$pidf\")\"; then st=running; "
          "elif [ -f \"$rcf\" ]; then st=running; else st=gone; fi; "
          "size=$(stat -c %s \"$log\" 2>/dev/null || echo -1); "
          "printf 'CVS-POLL %s %s\\n' \"$size\" \"$st\"; "
          "if [ \"$size\" -gt \"$off\" ]; then tail -c +$((off + 1)) \"$log\" | head -c \"$max\"; fi",
          "cvs-poll", log, rc_file, pid_file, std::to_string(offset), std::to_string(max_bytes)};
}

std::optional<PollReply> parse_poll_reply(const std::string& out) {
  const auto nl = out.find('\n');
  if (out.rfind("CVS-POLL ", 0) != 0 || nl == std::string::npos) return std::nullopt;
  const std::string header = out.substr(9, nl - 9);
  PollReply r;
  char* end = nullptr;
  r.size = std::strtoll(header.c_str(), &end, 10);
  std::string rest = end ? std::string(end) : "";
  while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
  if (rest.rfind("exited", 0) == 0) {
    r.state = "exited";
    r.exit_code = std::atoi(rest.c_str() + 6);
  } else {
    r.state = rest;
  }
  r.data = out.substr(nl + 1);
  return r;
}

std::vector<std::string> stop(const std::string& pid_file, int grace_seconds) {
  return {"sh", "-c",
          std::string(kAlive) + "pidf=$1; grace=$2; [ -f \"$pidf\" ] || exit 0; p=$(cat \"$pidf\"); "
          "case \"$p\" in ''|*[!0-9]*) echo \"cvs: bad pid file $pidf\" >&2; exit 1;; esac; "
          "[ \"$p\" -gt 1 ] || { echo \"cvs: refusing to signal process group $p\" >&2; exit 1; }; "
          "kill -TERM \"-$p\" 2>/dev/null || exit 0; i=0; "
          "while alive \"$p\" && [ $i -lt $((grace * 5)) ]; do sleep 0.2; i=$((i + 1)); done; "
          "kill -KILL \"-$p\" 2>/dev/null; exit 0",
          "cvs-stop", pid_file, std::to_string(grace_seconds)};
}

std::vector<std::string> first_existing(const std::vector<std::string>& paths) {
  std::vector<std::string> v = {"sh", "-c", "for p in \"$@\"; do if [ -f \"$p\" ]; then echo \"$p\"; exit 0; fi; done; exit 1",
                                "cvs-first"};
  v.insert(v.end(), paths.begin(), paths.end());
  return v;
}

}  // namespace cvs::agent
