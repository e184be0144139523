// Launcher::run: one training run watched to its end (RunMonitor): the YAMLs, the detached start,
// a log stream per node, the step and error checks, the stop, the outcome. The rest of the
// Launcher (setup, containers, teardown) is launch.cpp.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/config/text_file.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/local_log_stream.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/node_stream.hpp"
#include "cvs/exec/node_tracker.hpp"
#include "cvs/exec/placement.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace cvs {

// One run from its files to its verdict: the node files and report copies, the YAML and the start
// on every node, one log stream per node, and the watch (frames applied to each node's tracker,
// lost streams restarted, the verdict after every read, progress, stop).
class Launcher::RunMonitor {
 public:
  RunMonitor(Launcher& l, const RunRequest& req, const ProgressSink& progress)
      : l_(l), req_(req), progress_(progress), n_(l.cluster_.nodes.size()), nodes_(n_) {}

  std::string prepare();  // node files, report copies; "" or why not
  std::string write_yamls();
  std::string start();
  void open_streams();
  RunOutcome watch();
  RunOutcome fail(std::string msg) {
    out_.ok = false;
    out_.failure = std::move(msg);
    out_.wall_seconds = elapsed();
    return out_;
  }
  RunOutcome infrastructure_failure(std::string msg) {
    out_.infrastructure = true;
    return fail(std::move(msg));
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  double telemetry_interval_s() const {
    const double poll = std::chrono::duration<double>(l_.policy_.interval).count();
    return l_.cfg_.telemetry.interval_s > 0 ? l_.cfg_.telemetry.interval_s : poll;
  }
  ProcRequest stream_request(std::size_t r) const;
  void apply(std::size_t r, StreamFrame& f);
  void check_stream(std::size_t r, StreamUpdate& u);
  std::string verdict();
  void report_progress(const std::string& failure);
  void stop_all();
  void finish_scans();
  std::optional<RunOutcome> decide(const std::string& failure);
  RunOutcome end_failed();
  RunOutcome end_early();
  std::optional<RunOutcome> end_if_all_exited();

  Launcher& l_;
  const RunRequest& req_;
  const ProgressSink& progress_;
  const std::size_t n_;
  const Clock::time_point t0_ = Clock::now();
  std::string rdir_, yaml_;
  RunOutcome out_;
  std::vector<NodeTracker> nodes_;
  StreamSet streams_;
  bool stop_sent_ = false;
  std::string shrank_;
  double last_progress_ = -1e9;
  const char* phase_ = nullptr;  // what the head's log showed at the last progress line, and since when
  double phase_since_ = 0;
};

std::string Launcher::RunMonitor::prepare() {
  const std::string attempt = req_.attempt.empty() ? "" : "/" + req_.attempt;
  rdir_ = l_.run_dir(req_.run_name) + attempt;
  const std::string tdir = l_.cfg_.paths.temp_dir + "/" + req_.run_name + attempt;
  yaml_ = to_maxtext_yaml(req_.maxtext_config);
  std::error_code ec;
  fs::create_directories(req_.copy_dir, ec);
  out_.maxtext_yaml_local = req_.copy_dir / "maxtext.yml";
  std::ofstream(out_.maxtext_yaml_local, std::ios::binary) << yaml_;
  out_.nodes.resize(n_);
  for (std::size_t r = 0; r < n_; ++r) {
    const std::string nd = rdir_ + "/node-" + std::to_string(r);
    auto& t = nodes_[r];
    t.log = nd + "/training.log";
    t.rc = nd + "/exit_code";
    t.pid = nd + "/pid";
    t.yaml = tdir + "/node-" + std::to_string(r) + "/maxtext.yml";
    if (l_.cfg_.telemetry.enabled) t.telemetry_file = nd + "/telemetry.log";
    auto& no = out_.nodes[r];
    no.node = l_.cluster_.nodes[r].name;
    no.rank = static_cast<int>(r);
    no.remote_log = t.log;
    no.state = NodeState::NotStarted;
    no.local_log = req_.copy_dir / ("node-" + std::to_string(r)) / "training.log";
    fs::create_directories(no.local_log.parent_path(), ec);
    if (fs::exists(no.local_log))
      return "refusing to overwrite the existing report copy " + no.local_log.string();
    t.copy = std::make_unique<std::ofstream>(no.local_log, std::ios::binary);
    t.scanner = std::make_unique<LogScanner>(l_.cfg_.error_patterns);
  }
  return "";
}

// The MaxText YAML on every node (one file per rank: nodes may share a filesystem). Under Slurm it
// is written by a step on the node; elsewhere by the start program.
std::string Launcher::RunMonitor::write_yamls() {
  if (!l_.placement_->writes_yaml_in_a_step()) return "";
  std::vector<std::vector<std::string>> writes(n_);
  for (std::size_t r = 0; r < n_; ++r)
    writes[r] = l_.runtime_->exec_argv(agent::write_file(nodes_[r].yaml, yaml_, false), {});
  auto rs = fan_out(l_.transport_, writes, std::chrono::seconds(60));
  for (std::size_t r = 0; r < n_; ++r)
    if (!rs[r].ok())
      return l_.cluster_.nodes[r].name + ": writing " + nodes_[r].yaml + ": " + rs[r].describe();
  return "";
}

// Training started detached on every node at once; on a failed start every node is stopped.
std::string Launcher::RunMonitor::start() {
  const bool yaml_written = l_.placement_->writes_yaml_in_a_step();
  std::vector<std::vector<std::string>> per_node(n_);
  std::vector<EnvList> envs(n_);
  for (std::size_t r = 0; r < n_; ++r) {
    const auto& t = nodes_[r];
    const auto& python = l_.cfg_.train_params.python;
    std::vector<std::string> argv = {python, l_.train_script_, t.yaml};
    std::string warm_pid;
    if (const auto& warm = l_.warm_.serving(); !warm.empty()) {
      warm_pid = t.pid + ".warm";
      argv = agent::warm_start(python, warm[r].name, warm[r].pid_file, warm_pid, argv);
    }
    if (!t.telemetry_file.empty())
      argv = agent::with_telemetry(t.telemetry_file, telemetry_interval_s(), t.log, argv, warm_pid);
    auto [train, env] = l_.placement_->training(r, argv, l_.node_env(r));
    envs[r] = std::move(env);
    per_node[r] = agent::start_detached(
        t.log, t.rc, t.pid, train,
        yaml_written ? std::nullopt : std::optional<agent::FileToWrite>({t.yaml, yaml_}));
  }
  spdlog::info("[{}] starting {} on {} node(s): {}", req_.label, req_.run_name, n_, rdir_);
  auto rs = l_.agent_fan_out(per_node, std::chrono::seconds(120), envs);
  std::string problems;
  for (std::size_t r = 0; r < n_; ++r) {
    if (rs[r].ok()) {
      out_.nodes[r].state = NodeState::Running;
      l_.pid_files_live_.push_back(nodes_[r].pid);
    } else {
      problems +=
          (problems.empty() ? "" : "; ") + l_.cluster_.nodes[r].name + ": start failed: " + rs[r].describe();
    }
  }
  if (problems.empty()) return "";
  std::vector<std::vector<std::string>> stops(n_);
  for (std::size_t r = 0; r < n_; ++r) stops[r] = agent::stop(nodes_[r].pid, l_.policy_.stop_grace_s);
  l_.agent_fan_out(stops, std::chrono::seconds(60));
  return problems;
}

ProcRequest Launcher::RunMonitor::stream_request(std::size_t r) const {
  const auto& t = nodes_[r];
  const double interval_s = std::chrono::duration<double>(l_.policy_.interval).count();
  auto program = agent::stream(t.log, t.rc, t.pid, t.offset, interval_s, l_.policy_.max_bytes_per_frame,
                               l_.policy_.stop_grace_s, t.telemetry_file, t.telemetry_offset);
  return ProcRequest{l_.agent_argv(r, program), {}, l_.cluster_.nodes[r].name};
}

// Every node's log as a stream: one long-lived stream per node pushes its run state and the log
// bytes written since its last frame, every interval; all are read here on one thread, so a poll
// costs no process and no round trip per node. Under Slurm the logs are here (each srun step
// streams its output to this host): they are followed in-process.
void Launcher::RunMonitor::open_streams() {
  const auto& p = l_.policy_;
  for (std::size_t r = 0; r < n_; ++r) {
    const auto& t = nodes_[r];
    if (l_.placement_->logs_here())
      streams_.add_local({t.log, t.rc, t.pid, t.offset, p.interval, p.max_bytes_per_frame, p.stop_grace_s,
                          t.telemetry_file, t.telemetry_offset});
    else
      streams_.add(stream_request(r));
  }
  out_.start_seconds = elapsed();
}

void Launcher::RunMonitor::apply(std::size_t r, StreamFrame& f) {
  auto& t = nodes_[r];
  auto& no = out_.nodes[r];
  if (f.telemetry) {
    t.telemetry_offset += f.data.size();
    t.telemetry.feed(f.data);
    // A GPU fault, a machine check or a NIC going down on the node during the run fails it, as
    // an error line does (config telemetry.kernel_log).
    for (const auto& k : t.telemetry.take_new_kernel_lines())
      if (k.pattern->fails && !k.context && l_.cfg_.telemetry.kernel_log) t.kernel_failed = true;
    return;
  }
  if (f.size >= 0 && static_cast<unsigned long long>(f.size) < t.offset && shrank_.empty())
    shrank_ = no.node + ": " + t.log + " shrank during the run (truncated or replaced)";
  if (!f.data.empty()) {
    t.copy->write(f.data.data(), static_cast<std::streamsize>(f.data.size()));
    t.scanner->feed(f.data);
    t.offset += f.data.size();
  }
  no.state = f.state;
  no.exit_code = f.exit_code;
  if (f.state != NodeState::Running) t.final_frame = true;
  const auto& sr = t.scanner->result();
  if (!sr.steps.empty()) {
    no.last_step = sr.steps.back().step;
    no.last_step_seconds = sr.steps.back().seconds.value_or(0.0);
  }
}

// A stream that broke, ended without its final frame or went silent: a dropped connection gets
// three more streams, one interval apart, before the node counts as unreachable.
void Launcher::RunMonitor::check_stream(std::size_t r, StreamUpdate& u) {
  auto& t = nodes_[r];
  auto& no = out_.nodes[r];
  std::string why;
  if (!u.framing_error.empty()) {
    why = "its log stream broke: " + u.framing_error;
  } else if (u.ended) {
    why = "its log stream ended without a final frame (" +
          (u.spawn_error.empty() ? "exit " + std::to_string(u.exit_code)
                                 : "could not start: " + u.spawn_error) +
          (u.err_tail.empty() ? "" : ": " + last_lines(u.err_tail, 2)) + ")";
    if (t.restarts < 3 && u.spawn_error.empty()) {
      if (elapsed() < t.next_restart_s) return;
      ++t.restarts;
      t.next_restart_s = elapsed() + std::chrono::duration<double>(l_.policy_.interval).count();
      spdlog::warn("{}: {}; restarting it from byte {} ({}/3)", no.node, why, t.offset, t.restarts);
      streams_.restart(r, stream_request(r));
      return;
    }
  } else if (u.silent_s > std::chrono::duration<double>(l_.policy_.silence_timeout).count()) {
    why = "no frame from its log stream for " + std::to_string(static_cast<long long>(u.silent_s)) + " s";
  }
  if (why.empty()) return;
  no.state = NodeState::Unreachable;
  t.final_frame = true;  // nothing more comes from it
  t.lost = no.node + ": node unreachable while streaming " + t.log + ": " + why;
}

// Every node's problem, most causal first: a node that is unreachable, gone or exited non-zero
// usually explains the collective errors its peers print right after. Evaluated again after a
// stop, when every stream has sent its last frame: a node that died just before its peers
// reported errors is named first even if its own frame came later.
std::string Launcher::RunMonitor::verdict() {
  std::vector<std::string> dead, errors;
  if (!shrank_.empty()) dead.push_back(shrank_);
  for (std::size_t r = 0; r < n_; ++r) {
    auto& t = nodes_[r];
    const auto& no = out_.nodes[r];
    if (!t.lost.empty()) dead.push_back(t.lost);
    auto d = t.death(no, stop_sent_);
    const auto& sr = t.scanner->result();
    if (const auto* e = t.counted_error()) {
      if (!out_.first_error) {
        out_.first_error = *e;
        out_.first_error_node = no.node;
      }
      // The node whose error was seen first leads the message (verdicts run several times a
      // poll: a later one may find the other nodes' errors too).
      auto msg = no.node + ": error pattern '" + e->pattern_name + "' at " + t.log + ":" +
                 std::to_string(e->line_no) + ": " + e->line;
      // Its own error explains its own exit code: the exit follows the error, among the errors.
      if (!d.empty() && no.state == NodeState::Exited) msg += "; " + std::exchange(d, "");
      errors.insert(no.node == out_.first_error_node ? errors.begin() : errors.end(), std::move(msg));
    } else if (sr.abort) {
      errors.push_back(no.node + ": MaxText aborted training on a " + *sr.abort + " loss");
    } else if (const auto& nan = t.check_finite(no.node); !nan.empty()) {
      errors.push_back(nan);
    }
    if (auto k = t.kernel_failure(no.node); !k.empty()) errors.push_back(std::move(k));
    if (!d.empty()) dead.push_back(std::move(d));
  }
  std::string failure;
  for (const auto* list : {&dead, &errors})
    for (const auto& m : *list) failure += (failure.empty() ? "" : "; ") + m;
  return failure;
}

void Launcher::RunMonitor::report_progress(const std::string& failure) {
  const double interval_s = std::chrono::duration<double>(l_.policy_.interval).count();
  if (!progress_ || (elapsed() - last_progress_ < 0.9 * interval_s && failure.empty())) return;
  last_progress_ = elapsed();
  Progress p;
  p.label = req_.label;
  p.total = req_.steps;
  const auto& head = nodes_[0].scanner->result();
  if (!head.steps.empty()) {
    p.step = head.steps.back().step;
    if (head.steps.back().loss_logged) p.loss = head.steps.back().loss;
    p.tokens_per_sec = head.steps.back().tokens_per_device;
  } else {
    const char* phase = head.peak_memory_gb              ? "compiling"
                        : !head.effective_config.empty() ? "initialising"
                                                         : "starting";
    if (phase != phase_) {
      phase_ = phase;
      phase_since_ = elapsed();
    }
    p.phase = phase_;
    p.phase_s = elapsed() - phase_since_;
  }
  double slowest = -1;
  for (const auto& no : out_.nodes)
    if (no.last_step_seconds > slowest && no.last_step) {
      slowest = no.last_step_seconds;
      p.slowest_node = no.node;
    }
  p.elapsed_s = elapsed();
  if (p.step >= 1 && !head.steps.empty()) {
    const double per = p.elapsed_s / static_cast<double>(head.steps.size());
    p.eta_s = per * static_cast<double>(req_.steps - 1 - p.step);
  }
  progress_(p);
}

// Stop: one "stop" line per live stream; the node stops its run and its stream ends with a
// final frame (the log read to its end). A node whose stream is gone or does not confirm in
// time gets the stop program, as do nodes whose run already ended (a crashed rank's leftovers).
void Launcher::RunMonitor::stop_all() {
  stop_sent_ = true;
  const auto stop_t0 = Clock::now();
  const auto& p = l_.policy_;
  std::vector<bool> asked(n_, false);
  for (std::size_t r = 0; r < n_; ++r) asked[r] = !nodes_[r].final_frame && streams_.send(r, "stop");
  const auto deadline = Clock::now() + std::chrono::seconds(p.stop_grace_s + 5) + 2 * p.interval;
  auto waiting = [&] {
    for (std::size_t r = 0; r < n_; ++r)
      if (asked[r] && !nodes_[r].final_frame && !streams_.ended(r)) return true;
    return false;
  };
  while (waiting() && Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto ups = streams_.collect(std::min<std::chrono::milliseconds>(std::chrono::milliseconds(100), left));
    for (std::size_t r = 0; r < n_; ++r)
      for (auto& f : ups[r].frames) apply(r, f);
  }
  std::vector<std::size_t> rest;
  for (std::size_t r = 0; r < n_; ++r)
    if (!asked[r] || !nodes_[r].final_frame || out_.nodes[r].state != NodeState::Stopped) rest.push_back(r);
  spdlog::info(
      "[{}] stop: {} node(s) confirmed through their streams in {:.2f} s; {} left to the stop program",
      req_.label, n_ - rest.size(), std::chrono::duration<double>(Clock::now() - stop_t0).count(),
      rest.size());
  if (!rest.empty()) {
    std::vector<ProcRequest> reqs;
    for (auto r : rest)
      reqs.push_back({l_.agent_argv(r, agent::stop(nodes_[r].pid, p.stop_grace_s)), std::chrono::seconds(60),
                      l_.cluster_.nodes[r].name});
    auto rs = run_all(reqs);
    for (std::size_t k = 0; k < rest.size(); ++k)
      if (!rs[k].ok()) spdlog::warn("{}: stop: {}", l_.cluster_.nodes[rest[k]].name, rs[k].describe());
  }
  l_.placement_->after_stop();
}

void Launcher::RunMonitor::finish_scans() {
  std::vector<std::string> mine;
  for (std::size_t r = 0; r < n_; ++r) {
    nodes_[r].scanner->finish();
    out_.nodes[r].scan = nodes_[r].scanner->result();
    if (!nodes_[r].telemetry_file.empty())
      out_.nodes[r].telemetry = summarize_telemetry(out_.nodes[r].node, nodes_[r].telemetry);
    nodes_[r].copy->flush();
    mine.push_back(nodes_[r].pid);
  }
  std::vector<std::string> still;
  for (const auto& p : l_.pid_files_live_)
    if (std::find(mine.begin(), mine.end(), p) == mine.end()) still.push_back(p);
  l_.pid_files_live_ = still;
}

// A node lost while streaming is the infrastructure's failure, unless the workload itself failed
// too (an error line, a NaN, an exit code): that is the verdict then.
RunOutcome Launcher::RunMonitor::end_failed() {
  stop_all();
  finish_scans();
  bool workload = false, lost_any = false;
  for (std::size_t r = 0; r < n_; ++r) {
    workload |= nodes_[r].workload_failed(out_.nodes[r]);
    lost_any |= !nodes_[r].lost.empty() || !nodes_[r].warm_trainer_end(out_.nodes[r]).empty();
  }
  out_.infrastructure = lost_any && !workload;
  return fail(verdict());
}

RunOutcome Launcher::RunMonitor::end_early() {
  spdlog::info("[{}] every gate is decisive at step {}: stopping the run early", req_.label,
               out_.nodes[0].last_step.value_or(-1));
  for (auto& t : nodes_) t.lines_at_stop = t.scanner->result().lines;
  stop_all();
  finish_scans();
  if (const auto late = verdict(); !late.empty()) return fail(late);  // an error in the last bytes
  out_.ok = true;
  // The stop may come after the head's last step (fast steps): then the run completed.
  const auto& head = out_.nodes[0].scan;
  out_.completed = !head.steps.empty() && head.steps.back().step == req_.steps - 1;
  out_.stopped_early = !out_.completed;
  out_.wall_seconds = elapsed();
  return out_;
}

std::optional<RunOutcome> Launcher::RunMonitor::end_if_all_exited() {
  for (std::size_t r = 0; r < n_; ++r)
    if (!nodes_[r].final_frame || out_.nodes[r].state != NodeState::Exited) return std::nullopt;
  // Every exit code is 0 here (a non-zero one failed the verdict).
  finish_scans();
  const long long final_step = req_.steps - 1;
  const auto& head = out_.nodes[0].scan;
  if (head.steps.empty() || head.steps.back().step != final_step)
    return fail(out_.nodes[0].node + ": exited 0 but the final step " + std::to_string(final_step) +
                " was never logged (last step " +
                (head.steps.empty() ? std::string("none") : std::to_string(head.steps.back().step)) + ")");
  out_.ok = true;
  out_.completed = true;
  out_.wall_seconds = elapsed();
  spdlog::info("[{}] completed {} steps in {:.1f} s", req_.label, req_.steps, out_.wall_seconds);
  return out_;
}

// After a read: a failure, an early stop, every node done, Ctrl-C or the budget spent end the run.
std::optional<RunOutcome> Launcher::RunMonitor::decide(const std::string& failure) {
  if (!failure.empty()) return end_failed();
  if (req_.stop_when && req_.stop_when(nodes_[0].scanner->result().steps)) return end_early();
  if (auto done = end_if_all_exited()) return done;
  if (g_interrupted.load()) {
    stop_all();
    finish_scans();
    out_.interrupted = true;
    return fail("interrupted (Ctrl-C): every node was stopped");
  }
  const double budget = l_.policy_.budget_for(req_.steps);
  if (elapsed() <= budget) return std::nullopt;
  stop_all();
  finish_scans();
  out_.timed_out = true;
  const auto& head = out_.nodes[0];
  return fail("poll budget exceeded: " + std::to_string(static_cast<long long>(budget)) + " s (" +
              std::to_string(static_cast<long long>(l_.policy_.startup_s)) + " s startup + " +
              std::to_string(req_.steps) + " steps x " +
              std::to_string(static_cast<long long>(l_.policy_.per_step_s)) + " s); last step on " +
              head.node + ": " + (head.last_step ? std::to_string(*head.last_step) : std::string("none")));
}

// The streams push every interval; reading them four times as often bounds the time from a node's
// frame to its verdict. Progress is reported once per interval.
RunOutcome Launcher::RunMonitor::watch() {
  const auto tick =
      std::max<std::chrono::milliseconds>(l_.policy_.interval / 4, std::chrono::milliseconds(10));
  while (true) {
    auto ups = streams_.collect(tick);
    for (std::size_t r = 0; r < n_; ++r) {
      for (auto& f : ups[r].frames) apply(r, f);
      if (!nodes_[r].final_frame) check_stream(r, ups[r]);
    }
    const std::string failure = verdict();
    report_progress(failure);
    if (auto end = decide(failure)) return *end;
  }
}

RunOutcome Launcher::run(const RunRequest& req, const ProgressSink& progress) {
  RunMonitor run(*this, req, progress);
  if (auto why = run.prepare(); !why.empty()) return run.infrastructure_failure(why);
  if (auto why = run.write_yamls(); !why.empty()) return run.infrastructure_failure(why);
  if (auto why = run.start(); !why.empty()) return run.infrastructure_failure(why);
  run.open_streams();
  return run.watch();
}

}  // namespace cvs
