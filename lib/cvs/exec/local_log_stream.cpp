#include "cvs/exec/local_log_stream.hpp"

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cvs/config/text_file.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace cvs {
namespace {

// The run's session id from the pid file; 0 when missing or not a number.
int read_pid(const std::string& pid_file) {
  const auto text = read_text_file(pid_file).value_or("");
  char* end = nullptr;
  const long p = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || p <= 0 || p > 1 << 30) return 0;
  return static_cast<int>(p);
}

// The process exists and is not a zombie (see node_agent.cpp).
bool alive(int pid) {
  if (pid <= 1) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("State:", 0) == 0) return line.find('Z', 6) == std::string::npos;
  return false;
}

void touch(const std::string& path) {
  std::ofstream(path, std::ios::app);
}

}  // namespace

LocalLogStream::LocalLogStream(LocalStreamSpec spec) : spec_(std::move(spec)) {}

StreamFrame LocalLogStream::next_frame() {
  StreamFrame f;
  std::error_code ec;
  // The state before the size, as the stream program: an exit seen here means every byte
  // written before it is within the size read next. Whether the run lives is read before its exit
  // code: a run that exits between the two reads has written its code by the second (the code
  // first and the liveness after could see neither, and call a clean exit gone).
  const bool lives = alive(read_pid(spec_.pid_file));
  const auto rc = read_text_file(spec_.rc_file);
  if (rc && !rc->empty()) {
    f.state = NodeState::Exited;
    f.exit_code = std::atoi(rc->c_str());
  } else if (fs::exists(spec_.pid_file + ".stopped", ec)) {
    f.state = NodeState::Stopped;
  } else if (fs::exists(spec_.pid_file + ".stopping", ec) || lives || rc) {
    f.state = NodeState::Running;
  } else {
    f.state = NodeState::Gone;
  }
  const auto size = fs::file_size(spec_.log, ec);
  f.size = ec ? -1 : static_cast<long long>(size);
  if (f.size > static_cast<long long>(spec_.offset)) {
    const auto n =
        std::min<unsigned long long>(static_cast<unsigned long long>(f.size) - spec_.offset, spec_.max_bytes);
    std::ifstream in(spec_.log, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(spec_.offset));
    f.data.resize(n);
    in.read(f.data.data(), static_cast<std::streamsize>(n));
    f.data.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
    spec_.offset += f.data.size();
  }
  return f;
}

// The telemetry written since the last one, as the stream program sends it (before the log frame).
std::optional<StreamFrame> LocalLogStream::telemetry_frame() {
  if (spec_.telemetry.empty()) return std::nullopt;
  std::error_code ec;
  const auto size = fs::file_size(spec_.telemetry, ec);
  if (ec || size <= spec_.telemetry_offset) return std::nullopt;
  StreamFrame f;
  f.telemetry = true;
  std::ifstream in(spec_.telemetry, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(spec_.telemetry_offset));
  f.data.resize(size - spec_.telemetry_offset);
  in.read(f.data.data(), static_cast<std::streamsize>(f.data.size()));
  f.data.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  spec_.telemetry_offset += f.data.size();
  return f;
}

void LocalLogStream::stop() {
  if (ended_ || stopping_) return;
  touch(spec_.pid_file + ".stopping");
  stop_pid_ = read_pid(spec_.pid_file);
  was_alive_ = alive(stop_pid_);
  if (stop_pid_ > 1) ::kill(-stop_pid_, SIGTERM);
  kill_at_ = Clock::now() + std::chrono::seconds(spec_.grace_seconds);
  stopping_ = true;
}

std::vector<StreamFrame> LocalLogStream::poll() {
  std::vector<StreamFrame> frames;
  const auto now = Clock::now();
  if (stopping_ && !stop_done_ && (!alive(stop_pid_) || now >= kill_at_)) {
    if (stop_pid_ > 1) ::kill(-stop_pid_, SIGKILL);
    std::error_code ec;
    if (was_alive_)
      touch(spec_.pid_file + ".stopped");
    else
      fs::remove(spec_.pid_file + ".stopping", ec);  // already dead: it stays gone (or exited)
    stop_done_ = true;
    due_ = now;  // the final frame at once
  }
  // The run's exit code appearing makes the next frame due at once (the stream program's sleep ends
  // early the same way): the final frame goes when the run ends, not an interval later.
  if (!ended_ && now < due_) {
    std::error_code ec;
    const auto rc_size = fs::file_size(spec_.rc_file, ec);
    if (!ec && rc_size > 0) due_ = now;
  }
  // At most four full frames per call: a huge backlog is read over several calls.
  for (int k = 0; k < 4 && !ended_ && now >= due_; ++k) {
    if (auto t = telemetry_frame()) frames.push_back(std::move(*t));
    frames.push_back(next_frame());
    const auto& f = frames.back();
    if (f.state != NodeState::Running && static_cast<long long>(spec_.offset) >= f.size) ended_ = true;
    due_ = f.data.size() >= spec_.max_bytes ? now : now + spec_.interval;
  }
  return frames;
}

}  // namespace cvs
