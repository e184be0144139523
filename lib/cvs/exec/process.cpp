#include "cvs/exec/process.hpp"

#include "cvs/base/text.hpp"
#include "cvs/exec/child_output.hpp"
#include "cvs/exec/process_group.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // before Boost 1.74 asio: its awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <deque>
#include <memory>
#include <set>

namespace bp = boost::process;
namespace asio = boost::asio;

namespace cvs {

std::string ProcResult::describe() const {
  std::string s = label.empty() ? "" : label + ": ";
  if (!spawn_error.empty()) return s + "could not start: " + spawn_error;
  if (timed_out) return s + "timed out after " + std::to_string(static_cast<int>(seconds)) + " s";
  s += "exit " + std::to_string(exit_code);
  const std::string tail = last_line(err.empty() ? out : err);
  if (!tail.empty()) s += ": " + tail.substr(0, 400);
  return s;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
          std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += shell_quote(a);
  }
  return s;
}

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

namespace {

struct Slot : ChildOutput {
  Slot(asio::io_context& io, const ProcRequest& r, ProcResult& res)
      : ChildOutput(io), req(r), result(res), timer(io) {}
  const ProcRequest& req;
  ProcResult& result;
  asio::steady_timer timer;
  int pending = 3;  // stdout EOF, stderr EOF, exit
  std::chrono::steady_clock::time_point start;
};

class Runner {
 public:
  Runner(const std::vector<ProcRequest>& reqs, std::vector<ProcResult>& results, std::size_t max_in_flight,
         const std::atomic<bool>* interrupt)
      : reqs_(reqs),
        results_(results),
        max_(std::max<std::size_t>(1, max_in_flight)),
        interrupt_(interrupt),
        watch_(io_) {}

  void run() {
    for (std::size_t i = 0; i < reqs_.size(); ++i) queue_.push_back(i);
    watch();  // a flag set already starts nothing
    pump();
    io_.run();
  }

 private:
  // Interrupted: SIGINT to every running child's group (once), and nothing more is started.
  void watch() {
    if (!interrupt_ || forwarded_ || (in_flight_ == 0 && queue_.empty())) return;
    if (interrupt_->load()) {
      forwarded_ = true;
      for (const auto& slot : running_)
        if (slot->child && slot->child->id() > 1) ::kill(-slot->child->id(), SIGINT);
      for (auto i : queue_) results_[i].spawn_error = "not started: interrupted";
      queue_.clear();
      return;
    }
    watch_.expires_after(std::chrono::milliseconds(100));
    watch_.async_wait([this](const boost::system::error_code& e) {
      if (!e) watch();
    });
  }

  void pump() {
    while (in_flight_ < max_ && !queue_.empty()) {
      const std::size_t i = queue_.front();
      queue_.pop_front();
      start(i);
    }
  }

  void start(std::size_t i) {
    const auto& req = reqs_[i];
    auto& res = results_[i];
    res.label = req.label;
    const std::string exe = find_program(req.argv, res.spawn_error);
    if (exe.empty()) return;
    auto slot = std::make_shared<Slot>(io_, req, res);
    slot->start = std::chrono::steady_clock::now();
    std::vector<std::string> args(req.argv.begin() + 1, req.argv.end());
    std::error_code ec;
    try {
      slot->child = std::make_unique<bp::child>(
          exe, bp::args(args), bp::std_out > slot->out, bp::std_err > slot->err, bp::std_in < bp::null, io_,
          NewProcessGroup{}, bp::on_exit([this, slot](int code, const std::error_code&) {
            slot->result.exit_code = code;
            done(slot);
          }),
          ec);
    } catch (const std::exception& e) {
      res.spawn_error = e.what();
      return;
    }
    if (ec) {
      res.spawn_error = ec.message();
      return;
    }
    ++in_flight_;
    running_.insert(slot);
    read(slot, slot->out, slot->obuf, slot->result.out);
    read(slot, slot->err, slot->ebuf, slot->result.err);
    slot->timer.expires_after(req.timeout);
    slot->timer.async_wait([slot](const boost::system::error_code& e) {
      if (e) return;
      slot->result.timed_out = true;
      // The whole group (a forked grandchild too), then our ends of its pipes: a process that
      // left the group must not hold the result past its timeout.
      const pid_t pgid = slot->child ? slot->child->id() : 0;
      if (pgid > 1) ::kill(-pgid, SIGKILL);
      boost::system::error_code ignore;
      slot->out.close(ignore);
      slot->err.close(ignore);
    });
  }

  void read(const std::shared_ptr<Slot>& slot, bp::async_pipe& pipe, std::array<char, 65536>& buf,
            std::string& sink) {
    pipe.async_read_some(asio::buffer(buf), [this, slot, &pipe, &buf, &sink](
                                                const boost::system::error_code& e, std::size_t n) {
      if (n > 0) {
        const std::size_t room = slot->req.max_output > sink.size() ? slot->req.max_output - sink.size() : 0;
        if (n > room) slot->result.truncated = true;
        sink.append(buf.data(), std::min(n, room));
      }
      if (e) {
        done(slot);
        return;
      }
      read(slot, pipe, buf, sink);
    });
  }

  void done(const std::shared_ptr<Slot>& slot) {
    if (--slot->pending > 0) return;
    slot->timer.cancel();
    slot->result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - slot->start).count();
    if (slot->result.timed_out) slot->result.exit_code = -1;
    --in_flight_;
    running_.erase(slot);
    // Not pump() here: done() may run inside Boost.Process's SIGCHLD handler (on_exit), which
    // walks its list of waiters; a child started now would add to that list mid-walk (a heap
    // corruption valgrind shows when more requests than max_in_flight queue up).
    asio::post(io_, [this] { pump(); });
  }

  asio::io_context io_;
  const std::vector<ProcRequest>& reqs_;
  std::vector<ProcResult>& results_;
  std::size_t max_;
  std::size_t in_flight_ = 0;
  std::deque<std::size_t> queue_;
  const std::atomic<bool>* interrupt_;
  bool forwarded_ = false;
  asio::steady_timer watch_;
  std::set<std::shared_ptr<Slot>> running_;
};

}  // namespace

std::string find_program(const std::vector<std::string>& argv, std::string& error) {
  if (argv.empty()) {
    error = "empty command";
    return "";
  }
  boost::filesystem::path exe = argv[0];
  if (exe.filename() == exe) exe = bp::search_path(argv[0]);
  if (exe.empty()) error = "'" + argv[0] + "' not found on PATH";
  return exe.string();
}

std::vector<ProcResult> run_all(const std::vector<ProcRequest>& requests, std::size_t max_in_flight,
                                const std::atomic<bool>* interrupt) {
  std::vector<ProcResult> results(requests.size());
  Runner(requests, results, max_in_flight, interrupt).run();
  return results;
}

ProcResult run_one(const ProcRequest& request) {
  return run_all({request}).front();
}

}  // namespace cvs
