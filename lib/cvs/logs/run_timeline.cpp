#include "cvs/logs/run_timeline.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace cvs {

namespace {

constexpr double kDay = 86400;
constexpr int kDaysBefore[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

// Paid on every step line (its time stamp): plain comparisons, no locale, no from_chars.
bool digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return false;
  for (std::size_t i = at; i < at + n; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

int number(std::string_view s, std::size_t at, std::size_t n) {  // n digits, checked by digits()
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

// "Lmmdd hh:mm:ss" at `at` (L one of glog's severities).
std::optional<double> header_at(std::string_view s, std::size_t at) {
  if (std::string_view("IWEF").find(s[at]) == std::string_view::npos) return std::nullopt;
  if (!digits(s, at + 1, 4) || at + 14 >= s.size() || s[at + 5] != ' ' || !digits(s, at + 6, 2) ||
      s[at + 8] != ':' || !digits(s, at + 9, 2) || s[at + 11] != ':' || !digits(s, at + 12, 2))
    return std::nullopt;
  const int month = number(s, at + 1, 2), day = number(s, at + 3, 2);
  if (month < 1 || month > 12 || day < 1 || day > 31) return std::nullopt;
  double t = (kDaysBefore[month - 1] + day - 1) * kDay + number(s, at + 6, 2) * 3600.0 +
             number(s, at + 9, 2) * 60.0 + number(s, at + 12, 2);
  std::size_t f = at + 14;
  if (f < s.size() && s[f] == '.') {
    double scale = 0.1;
    for (++f; f < s.size() && s[f] >= '0' && s[f] <= '9'; ++f, scale /= 10) t += (s[f] - '0') * scale;
  }
  return t;
}

// The quoted module name after `from` ("'jit_train_step'").
std::string quoted_after(std::string_view line, std::size_t from) {
  const auto open = line.find('\'', from);
  if (open == std::string_view::npos) return {};
  const auto close = line.find('\'', open + 1);
  return close == std::string_view::npos ? std::string()
                                         : std::string(line.substr(open + 1, close - open - 1));
}

}  // namespace

std::optional<double> glog_seconds(std::string_view line) {
  const std::size_t end = std::min<std::size_t>(line.size(), 64);
  for (std::size_t i = 0; i < end; ++i) {
    if (i > 0 && std::isalnum(static_cast<unsigned char>(line[i - 1]))) continue;
    if (auto t = header_at(line, i)) return t;
  }
  return std::nullopt;
}

std::optional<RunMark> parse_run_mark(std::string_view line) {
  RunMark m;
  if (line.find(kRunMarkNeedles[0]) != std::string_view::npos) {
    m.kind = RunMarkKind::Started;
  } else if (line.find(kRunMarkNeedles[1]) != std::string_view::npos) {
    m.kind = RunMarkKind::Exited;
  } else if (auto p = line.find(kRunMarkNeedles[2]); p != std::string_view::npos) {
    m.kind = RunMarkKind::CacheHit;
    m.name = quoted_after(line, p + std::string_view(kRunMarkNeedles[2]).size() - 1);
  } else if (auto q = line.find(kRunMarkNeedles[3]); q != std::string_view::npos) {
    m.kind = RunMarkKind::CacheMiss;
    m.name = quoted_after(line, q + std::string_view(kRunMarkNeedles[3]).size() - 1);
  } else if (auto c = line.find(kRunMarkNeedles[4]); c != std::string_view::npos) {
    // JAX: "'NAME' took at least 1.00 seconds to compile (1.82s)" or "Not writing persistent cache
    // entry for 'NAME' because it took < 1.00 seconds to compile (0.12s)".
    m.kind = RunMarkKind::Compiled;
    m.name = quoted_after(line, 0);
    const auto from = c + std::string_view(kRunMarkNeedles[4]).size();
    const auto res = std::from_chars(line.data() + from, line.data() + line.size(), m.seconds);
    if (res.ec != std::errc() || res.ptr == line.data() + line.size() || *res.ptr != 's') return std::nullopt;
  } else {
    return std::nullopt;
  }
  return m;
}

double RunTimeline::when(double at) const {
  // A run over a new year: a time far before its start is the next year's.
  return started_ && at < *started_ - 180 * kDay ? at + 365 * kDay : at;
}

void RunTimeline::mark(const RunMark& m, std::optional<double> at) {
  if (m.kind == RunMarkKind::CacheHit || m.kind == RunMarkKind::CacheMiss) {
    (m.kind == RunMarkKind::CacheHit ? cache_.hits : cache_.misses)++;
    if (m.name.find("train_step") != std::string::npos)
      cache_.train_step_hit = m.kind == RunMarkKind::CacheHit;
  }
  if (!at) return;
  if (m.kind == RunMarkKind::Started) {
    if (!started_) started_ = *at;
    return;
  }
  const double t = when(*at);
  last_at_ = std::max(last_at_.value_or(t), t);
  if (m.kind == RunMarkKind::Exited) exited_ = t;
  if (m.kind == RunMarkKind::Compiled) {
    compile_named_ = true;
    if (!first_step_at_) compile_before_first_ += m.seconds;
  }
}

void RunTimeline::step(double at, std::optional<double> step_seconds) {
  const double t = when(at);
  last_at_ = std::max(last_at_.value_or(t), t);
  if (!first_step_at_) {
    first_step_at_ = t;
    first_step_seconds_ = std::max(0.0, step_seconds.value_or(0.0));
  }
  last_step_at_ = t;
  ckpt_during_ += ckpt_since_last_step_;
  ckpt_since_last_step_ = 0;
}

void RunTimeline::checkpoint_io(double at, double seconds) {
  const double t = when(at);
  last_at_ = std::max(last_at_.value_or(t), t);
  (first_step_at_ ? ckpt_since_last_step_ : ckpt_before_) += std::max(0.0, seconds);
}

std::optional<RunPhases> RunTimeline::phases() const {
  if (!started_) return std::nullopt;
  RunPhases p;
  p.cache = cache_;
  p.compile_apart = compile_named_;
  const double end = exited_.value_or(last_at_.value_or(*started_));
  p.wall_s = end - *started_;
  p.checkpoint_s = ckpt_before_ + ckpt_during_ + ckpt_since_last_step_;
  if (!first_step_at_) {  // no step: all of it start-up (and what JAX said it compiled)
    p.compile_s = compile_before_first_;
    p.startup_s = std::max(0.0, end - *started_ - p.compile_s - p.checkpoint_s);
    return p;
  }
  const double stepping_from = std::max(*started_, *first_step_at_ - first_step_seconds_);
  p.compile_s = std::min(compile_before_first_, stepping_from - *started_);
  p.startup_s = std::max(0.0, stepping_from - *started_ - p.compile_s - ckpt_before_);
  p.training_s = std::max(0.0, *last_step_at_ - stepping_from - ckpt_during_);
  p.teardown_s = std::max(0.0, end - *last_step_at_ - ckpt_since_last_step_);
  return p;
}

void RunPhases::carve_stalls(double seconds) {
  stall_s = std::clamp(seconds, 0.0, training_s);
  training_s -= stall_s;
}

std::string RunPhases::words() const {
  const char* cached = !cache.train_step_hit   ? ""
                       : *cache.train_step_hit ? " (the train step from the compile cache)"
                                               : " (the train step compiled, not in the cache)";
  return fmt::format(
      "start-up {:.1f} s, compile {:.1f} s{}{}, training {:.1f} s{}, checkpoint I/O {:.1f} s, teardown "
      "{:.1f} "
      "s",
      startup_s, compile_s, compile_apart ? "" : " (JAX named no compile: in start-up)", cached, training_s,
      stall_s > 0 ? fmt::format(", stalls {:.1f} s", stall_s) : "", checkpoint_s, teardown_s);
}

void PhaseTotals::add(const RunPhases& p) {
  startup_s += p.startup_s;
  compile_s += p.compile_s;
  training_s += p.training_s;
  stall_s += p.stall_s;
  checkpoint_s += p.checkpoint_s;
  teardown_s += p.teardown_s;
  ++runs;
  if (p.cache.train_step_hit.value_or(false)) ++train_step_from_cache;
}

void PhaseTotals::add(const PhaseTotals& t, double nodes) {
  startup_s += t.startup_s * nodes;
  compile_s += t.compile_s * nodes;
  training_s += t.training_s * nodes;
  stall_s += t.stall_s * nodes;
  checkpoint_s += t.checkpoint_s * nodes;
  teardown_s += t.teardown_s * nodes;
  other_s += t.other_s * nodes;
  runs += t.runs;
  train_step_from_cache += t.train_step_from_cache;
}

std::string PhaseTotals::words() const {
  const double all = total_s();
  if (all <= 0 || runs == 0) return "";
  const auto pct = [&](double v) { return v / all * 100; };
  return fmt::format(
      "training {:.0f} %, start-up {:.0f} %, compile {:.0f} %, checkpoint I/O {:.0f} %, teardown {:.0f} %, "
      "other "
      "{:.0f} %; the train step from the compile cache in {} of {} run(s)",
      pct(training_s), pct(startup_s), pct(compile_s), pct(checkpoint_s), pct(teardown_s), pct(other_s),
      train_step_from_cache, runs);
}

}  // namespace cvs
