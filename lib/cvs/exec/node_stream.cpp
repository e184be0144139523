#include "cvs/exec/node_stream.hpp"

#include <csignal>
#include <cstdlib>
#include <mutex>
#include <utility>  // before Boost 1.74 asio: its awaitable.hpp uses std::exchange unincluded

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <stdexcept>
#include <thread>

#include "cvs/exec/child_output.hpp"
#include "cvs/exec/local_log_stream.hpp"
#include "cvs/exec/process_group.hpp"

namespace bp = boost::process;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace cvs {

// The words are the node states' own (catalog/node_state.hpp); a frame carries four of them.
std::optional<NodeState> frame_state(std::string_view word) {
  const auto s = node_state_from_string(word);
  if (s == NodeState::Running || s == NodeState::Exited || s == NodeState::Gone || s == NodeState::Stopped)
    return s;
  return std::nullopt;
}

std::vector<StreamFrame> FrameParser::feed(std::string_view bytes) {
  std::vector<StreamFrame> frames;
  if (!error_.empty()) return frames;
  buf_.append(bytes);
  std::size_t pos = 0;
  while (pos < buf_.size()) {
    if (open_) {
      const std::size_t take = std::min(need_, buf_.size() - pos);
      open_->data.append(buf_, pos, take);
      pos += take;
      need_ -= take;
      if (need_ > 0) break;
      frames.push_back(std::move(*open_));
      open_.reset();
      continue;
    }
    const auto nl = buf_.find('\n', pos);
    if (nl == std::string::npos) {
      if (buf_.size() - pos > 512)
        error_ = "no frame header in the first 512 bytes: '" + buf_.substr(pos, 80) + "'";
      break;
    }
    const std::string header = buf_.substr(pos, nl - pos);
    pos = nl + 1;
    StreamFrame f;
    if (header.rfind("CVS-TELEMETRY ", 0) == 0) {
      long long tn = -1;
      if (std::sscanf(header.c_str() + 14, "%lld", &tn) != 1 || tn < 0) {
        error_ = "not a telemetry header: '" + header.substr(0, 120) + "'";
        break;
      }
      f.telemetry = true;
      need_ = static_cast<std::size_t>(tn);
      open_ = std::move(f);
      if (need_ == 0) {
        frames.push_back(std::move(*open_));
        open_.reset();
      }
      continue;
    }
    char state[64] = {0};
    long long n = -1;
    int consumed = 0;
    if (header.rfind("CVS-FRAME ", 0) != 0 ||
        std::sscanf(header.c_str() + 10, "%lld %lld %63s%n", &f.size, &n, state, &consumed) < 3 || n < 0) {
      error_ = "not a frame header: '" + header.substr(0, 120) + "'";
      break;
    }
    const auto st = frame_state(state);
    if (!st) {
      error_ = "unknown state in frame header: '" + header + "'";
      break;
    }
    f.state = *st;
    if (f.state == NodeState::Exited) {
      char* end = nullptr;
      const char* rest = header.c_str() + 10 + consumed;
      const long rc = std::strtol(rest, &end, 10);
      if (end == rest) {
        error_ = "an exited frame without an exit code: '" + header + "'";
        break;
      }
      f.exit_code = static_cast<int>(rc);
    }
    need_ = static_cast<std::size_t>(n);
    f.data.reserve(need_);
    open_ = std::move(f);
    if (need_ == 0) {
      frames.push_back(std::move(*open_));
      open_.reset();
    }
  }
  buf_.erase(0, pos);
  if (!error_.empty()) buf_.clear();
  return frames;
}

namespace {

// The pipes and the child of a process stream (an in-process stream has none).
struct ProcessIo : ChildOutput {
  explicit ProcessIo(asio::io_context& io) : ChildOutput(io), in(io) {}
  bp::async_pipe in;
  FrameParser parser;
  bool reading = false;  // a read of `out` is armed
  bool out_eof = false, err_eof = false, exited = false;
};

struct Stream {
  std::unique_ptr<ProcessIo> proc;        // a process stream...
  std::unique_ptr<LocalLogStream> local;  // ...or an in-process one
  StreamUpdate pending;
  std::size_t pending_bytes = 0;
  Clock::time_point last_frame = Clock::now();
  bool ended() const {
    if (local) return local->ended();
    return !pending.spawn_error.empty() || (proc && proc->out_eof && proc->err_eof && proc->exited);
  }
};

std::string keep_tail(std::string s, std::size_t max_chars) {
  if (s.size() > max_chars) s.erase(0, s.size() - max_chars);
  return s;
}

}  // namespace

struct StreamSet::Impl {
  asio::io_context io;
  std::size_t max_pending;
  std::vector<std::shared_ptr<Stream>> streams;

  void read_out(const std::shared_ptr<Stream>& s) {
    auto& p = *s->proc;
    p.reading = true;
    p.out.async_read_some(asio::buffer(p.obuf), [this, s](const boost::system::error_code& e, std::size_t n) {
      auto& p = *s->proc;
      p.reading = false;
      if (n > 0) {
        for (auto& f : p.parser.feed(std::string_view(p.obuf.data(), n))) {
          s->pending_bytes += f.data.size();
          s->pending.frames.push_back(std::move(f));
          s->last_frame = Clock::now();
        }
        if (!p.parser.error().empty()) s->pending.framing_error = p.parser.error();
      }
      if (e) {
        p.out_eof = true;
        return;
      }
      if (s->pending_bytes < max_pending) read_out(s);
    });
  }

  void read_err(const std::shared_ptr<Stream>& s) {
    auto& p = *s->proc;
    p.err.async_read_some(asio::buffer(p.ebuf), [this, s](const boost::system::error_code& e, std::size_t n) {
      auto& p = *s->proc;
      if (n > 0) s->pending.err_tail = keep_tail(s->pending.err_tail + std::string(p.ebuf.data(), n), 4096);
      if (e) {
        p.err_eof = true;
        return;
      }
      read_err(s);
    });
  }

  std::shared_ptr<Stream> spawn(const ProcRequest& req) {
    auto s = std::make_shared<Stream>();
    std::string exe = find_program(req.argv, s->pending.spawn_error);
    if (exe.empty()) return s;
    s->proc = std::make_unique<ProcessIo>(io);
    auto& p = *s->proc;
    std::vector<std::string> args(req.argv.begin() + 1, req.argv.end());
    std::error_code ec;
    try {
      p.child = std::make_unique<bp::child>(exe, bp::args(args), bp::std_out > p.out, bp::std_err > p.err,
                                            bp::std_in < p.in, io, NewProcessGroup{},
                                            bp::on_exit([s](int code, const std::error_code&) {
                                              s->proc->exited = true;
                                              s->pending.exit_code = code;
                                            }),
                                            ec);
    } catch (const std::exception& e) {
      s->pending.spawn_error = e.what();
      return s;
    }
    if (ec) {
      s->pending.spawn_error = ec.message();
      return s;
    }
    read_out(s);
    read_err(s);
    return s;
  }

  bool has_local = false;

  void pump_local() {
    if (!has_local) return;
    for (auto& s : streams)
      if (s->local)
        for (auto& f : s->local->poll()) {
          s->pending.frames.push_back(std::move(f));
          s->last_frame = Clock::now();
        }
  }

  static void kill(Stream& s) {
    if (!s.proc) return;
    auto& p = *s.proc;
    std::error_code ec;
    if (p.in.is_open()) p.in.close();
    if (p.child && !p.exited && p.child->running(ec)) p.child->terminate(ec);
  }
};

StreamSet::StreamSet(std::size_t max_pending_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->max_pending = max_pending_bytes;
  // A write to the input of a stream that just died must fail with EPIPE, not kill the suite.
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
  raise_fd_limit();
}

StreamSet::~StreamSet() {
  for (auto& s : impl_->streams) Impl::kill(*s);
  impl_->io.stop();
}

std::size_t StreamSet::add(const ProcRequest& request) {
  impl_->streams.push_back(impl_->spawn(request));
  return impl_->streams.size() - 1;
}

std::size_t StreamSet::add_local(const LocalStreamSpec& spec) {
  auto s = std::make_shared<Stream>();
  s->local = std::make_unique<LocalLogStream>(spec);
  s->pending.exit_code = 0;
  impl_->streams.push_back(std::move(s));
  impl_->has_local = true;
  return impl_->streams.size() - 1;
}

void StreamSet::restart(std::size_t i, const ProcRequest& request) {
  if (impl_->streams.at(i)->local) throw std::logic_error("an in-process stream is never restarted");
  Impl::kill(*impl_->streams.at(i));
  impl_->streams[i] = impl_->spawn(request);
}

bool StreamSet::send(std::size_t i, const std::string& line) {
  auto& s = *impl_->streams.at(i);
  if (s.local) {
    if (line != "stop" || s.local->ended()) return false;
    s.local->stop();
    return true;
  }
  if (!s.proc || !s.proc->in.is_open() || s.ended()) return false;
  boost::system::error_code ec;
  asio::write(s.proc->in, asio::buffer(line + "\n"), ec);
  return !ec;
}

void StreamSet::close_input(std::size_t i) {
  auto& s = *impl_->streams.at(i);
  if (s.local) s.local->abandon();
  if (s.proc && s.proc->in.is_open()) s.proc->in.close();
}

bool StreamSet::ended(std::size_t i) const {
  return impl_->streams.at(i)->ended();
}
std::size_t StreamSet::size() const {
  return impl_->streams.size();
}

std::vector<StreamUpdate> StreamSet::collect(std::chrono::milliseconds wait) {
  auto& io = impl_->io;
  const auto deadline = Clock::now() + wait;
  auto all_ended = [&] {
    for (const auto& s : impl_->streams)
      if (!s->ended()) return false;
    return true;
  };
  io.restart();
  io.poll();  // what is ready now, also with wait == 0
  impl_->pump_local();
  while (!all_ended() && Clock::now() < deadline) {
    io.restart();
    // In-process streams are polled every 50 ms; process streams wake the loop themselves.
    const auto slice =
        impl_->has_local ? std::min(deadline, Clock::now() + std::chrono::milliseconds(50)) : deadline;
    if (io.run_one_until(slice) == 0 && io.stopped()) std::this_thread::sleep_until(slice);
    impl_->pump_local();
  }
  std::vector<StreamUpdate> out;
  out.reserve(impl_->streams.size());
  const auto now = Clock::now();
  for (auto& s : impl_->streams) {
    StreamUpdate u = std::move(s->pending);
    s->pending = StreamUpdate{};
    s->pending.spawn_error = u.spawn_error;  // sticky: the stream stays failed
    s->pending.err_tail = u.err_tail;        // kept: the last lines explain a later end
    s->pending.framing_error = u.framing_error;
    s->pending.exit_code = u.exit_code;
    s->pending_bytes = 0;
    u.ended = s->ended();
    u.silent_s = std::chrono::duration<double>(now - s->last_frame).count();
    if (s->proc && s->proc->child && !s->proc->reading && !s->proc->out_eof)
      impl_->read_out(s);  // resume after backpressure
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace cvs
