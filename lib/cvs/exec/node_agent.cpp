#include "cvs/exec/node_agent.hpp"

#include <cstdio>
#include <cstdlib>

#include "cvs/agent_scripts.hpp"  // generated from lib/cvs/exec/agent/*.sh and *.py

namespace cvs::agent {
namespace {
// A program that uses alive/run_pid gets common.sh in front of it.
std::string with_common(const char* program) {
  return std::string(scripts::common) + program;
}
}  // namespace

std::vector<std::string> write_file(const std::string& path, const std::string& content, bool overwrite) {
  return {"sh", "-c", scripts::write_file, "cvs-write", path, content, overwrite ? "1" : "0"};
}

std::vector<std::string> start_detached(const std::string& log, const std::string& rc_file,
                                        const std::string& pid_file, const std::vector<std::string>& argv,
                                        const std::optional<FileToWrite>& file) {
  std::vector<std::string> v = {"sh",
                                "-c",
                                scripts::start_detached,
                                "cvs-start",
                                log,
                                rc_file,
                                pid_file,
                                file ? file->path : "",
                                file ? file->content : ""};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

namespace {
std::string seconds(double s) {
  char iv[32];
  std::snprintf(iv, sizeof iv, "%.3f", s);
  return iv;
}
}  // namespace

std::vector<std::string> stream(const std::string& log, const std::string& rc_file,
                                const std::string& pid_file, unsigned long long offset, double interval_s,
                                unsigned long long max_bytes, int grace_seconds,
                                const std::string& telemetry_file, unsigned long long telemetry_offset) {
  return {"sh",
          "-c",
          with_common(scripts::stream),
          "cvs-stream",
          log,
          rc_file,
          pid_file,
          std::to_string(offset),
          seconds(interval_s),
          std::to_string(max_bytes),
          std::to_string(grace_seconds),
          telemetry_file,
          std::to_string(telemetry_offset)};
}

std::vector<std::string> with_telemetry(const std::string& out, double interval_s, const std::string& log,
                                        const std::vector<std::string>& argv,
                                        const std::string& warm_pid_file) {
  std::vector<std::string> v = {"sh",        "-c",          scripts::with_telemetry,
                                "cvs-train", out,           seconds(interval_s),
                                log,         warm_pid_file, with_common(scripts::telemetry)};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

std::vector<std::string> warm_trainer(const std::string& python, const std::string& name,
                                      const std::string& script, double idle_s,
                                      const std::vector<std::string>& per_training) {
  std::string keys;
  for (const auto& k : per_training) keys += (keys.empty() ? "" : ",") + k;
  return {python, "-c", scripts::warm_trainer, name, script, seconds(idle_s), keys};
}

std::vector<std::string> unless_running(const std::string& pid_file, const std::vector<std::string>& argv) {
  std::vector<std::string> v = {
      "sh", "-c",
      with_common("pidf=$1; shift; run_pid; if [ \"$p\" -gt 1 ] && alive \"$p\"; then echo \"running $p\"; "
                  "exit 0; fi; exec \"$@\""),
      "cvs-unless-running", pid_file};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

std::vector<std::string> if_warm_capable(const std::string& python, const std::vector<std::string>& argv) {
  std::vector<std::string> v = {"sh",
                                "-c",
                                "\"$1\" -I -S -c 'import socket, sys; sys.exit(not hasattr(socket, "
                                "\"send_fds\"))' </dev/null >/dev/null 2>&1 "
                                "|| exit \"$2\"; shift 2; exec \"$@\"",
                                "cvs-warm-check",
                                python,
                                std::to_string(kExitNotWarmCapable)};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

std::vector<std::string> warm_start(const std::string& python, const std::string& name,
                                    const std::string& trainer_pid_file, const std::string& pid_out,
                                    const std::vector<std::string>& argv) {
  std::vector<std::string> v = {python,
                                "-I",
                                "-S",
                                "-c",
                                scripts::warm_start,
                                name,
                                trainer_pid_file,
                                pid_out,
                                std::to_string(kExitWarmTrainerEnded),
                                kWarmTrainerEndedLine,
                                "--"};
  v.insert(v.end(), argv.begin(), argv.end());
  return v;
}

WarmStartSeen warm_start_seen(const std::string& out) {
  static const std::string kCold = "cvs-warm: cold start: ";
  WarmStartSeen seen;
  seen.forked = out.find(", forked from the warm trainer\n") != std::string::npos;
  if (const auto at = out.find(kCold); at != std::string::npos) {
    const auto from = at + kCold.size();
    seen.cold = out.substr(from, out.find('\n', from) - from);
  }
  return seen;
}

std::vector<std::string> stop(const std::string& pid_file, int grace_seconds) {
  return {"sh", "-c", with_common(scripts::stop), "cvs-stop", pid_file, std::to_string(grace_seconds)};
}

std::vector<std::string> await_warm(const std::string& dir, const std::string& prefix, int limit_s) {
  return {"sh", "-c",   with_common(scripts::await_warm), "cvs-await-warm",
          dir,  prefix, std::to_string(limit_s)};
}

std::vector<std::string> first_existing(const std::vector<std::string>& paths) {
  std::vector<std::string> v = {"sh", "-c", scripts::first_existing, "cvs-first"};
  v.insert(v.end(), paths.begin(), paths.end());
  return v;
}

}  // namespace cvs::agent
