#include "cvs/logs/maxtext_log.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace cvs {
namespace {

// Parses a float at the start of s (accepts nan/inf as written by Python); advances s.
std::optional<double> take_number(std::string_view& s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  s.remove_prefix(i);
  if (s.empty()) return std::nullopt;
  char buf[64];
  std::size_t n = 0;
  while (n < s.size() && n < sizeof(buf) - 1 && s[n] != ',' && s[n] != ' ' && s[n] != '\r') {
    buf[n] = s[n];
    ++n;
  }
  buf[n] = '\0';
  char* end = nullptr;
  double v = std::strtod(buf, &end);
  if (end == buf) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - buf));
  return v;
}

std::optional<long long> take_int(std::string_view& s) {
  auto d = take_number(s);
  if (!d || !std::isfinite(*d)) return std::nullopt;
  return static_cast<long long>(*d);
}

// Value of "name<sep>" in a comma-separated field list, e.g. field(s, "loss: ").
std::optional<double> field(std::string_view s, std::string_view name) {
  std::size_t pos = 0;
  while ((pos = s.find(name, pos)) != std::string_view::npos) {
    // the name must start a field: at the line start or after a comma and spaces (MaxText has
    // printed ",  loss: " too)
    std::size_t b = pos;
    while (b > 0 && s[b - 1] == ' ') --b;
    // A research fork separates its fields by spaces alone ("steps/s: 0.641 TFLOP/s/device: ..."):
    // a name after a space that ends a number starts a field too ("lm_loss: " never is "loss: ").
    const bool after_number = b > 0 && b < pos &&
                              ((s[b - 1] >= '0' && s[b - 1] <= '9') ||
                               (b >= 3 && (s.substr(b - 3, 3) == "nan" || s.substr(b - 3, 3) == "inf")));
    if (pos == 0 || (b > 0 && b < pos && s[b - 1] == ',') || after_number) {
      std::string_view rest = s.substr(pos + name.size());
      return take_number(rest);
    }
    pos += name.size();
  }
  return std::nullopt;
}

bool contains(std::string_view s, std::string_view n) {
  return s.find(n) != std::string_view::npos;
}

std::optional<long long> int_after(std::string_view s, std::string_view needle) {
  auto p = s.find(needle);
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = s.substr(p + needle.size());
  return take_int(rest);
}

// "... in 0.14 seconds @ /path/to/checkpoints/10" -> seconds, step (last path component).
std::optional<CheckpointEvent> orbax_duration(std::string_view s, std::string_view needle,
                                              CheckpointEventKind kind) {
  auto p = s.find(needle);
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = s.substr(p + needle.size());
  auto secs = take_number(rest);
  if (!secs) return std::nullopt;
  CheckpointEvent ev{kind, -1, *secs};
  auto at = rest.find(" @ ");
  if (at != std::string_view::npos) {
    std::string_view path = rest.substr(at + 3);
    while (!path.empty() && (path.back() == '\r' || path.back() == ' ' || path.back() == '.'))
      path.remove_suffix(1);
    auto slash = path.rfind('/');
    std::string_view last = slash == std::string_view::npos ? path : path.substr(slash + 1);
    if (!last.empty() && last.find_first_not_of("0123456789") == std::string_view::npos)
      ev.step = std::strtoll(std::string(last).c_str(), nullptr, 10);
  }
  return ev;
}

// The fast path for the line MaxText writes every step (metric_logger.py), in its fixed field
// order: "completed step: N, seconds: S, TFLOP/s/device: T, Tokens/s/device: K, total_weights: W,
// loss: L" (more fields may follow). std::from_chars, no copies; nullopt on any deviation (rampup,
// other orders, other spellings), which the general parser then reads.
bool expect(std::string_view& s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit) return false;
  s.remove_prefix(lit.size());
  return true;
}

// "123.456" as N / 10^k with N < 2^53 and k <= 15: both exact doubles, so the one IEEE division
// is the correctly rounded value, the same double std::from_chars gives (Clinger's fast path).
// Anything else (exponents, nan, inf, long digit strings) goes to std::from_chars.
bool short_decimal(std::string_view& s, double& out) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  std::size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) ++i;
  std::uint64_t n = 0;
  int digits = 0, frac = -1;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
      if (++digits > 15) return false;
      if (frac >= 0) ++frac;
    } else if (c == '.' && frac < 0) {
      frac = 0;
    } else {
      break;
    }
  }
  if (digits == 0 || (i < s.size() && (s[i] == 'e' || s[i] == 'E'))) return false;
  const double v = static_cast<double>(n) / kPow10[frac < 0 ? 0 : frac];
  out = neg ? -v : v;
  s.remove_prefix(i);
  return true;
}

bool number(std::string_view& s, double& out) {
  if (short_decimal(s, out)) return true;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc()) return false;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return true;
}

std::optional<StepRecord> fast_step(std::string_view s) {
  if (s.find('[') != std::string_view::npos) return std::nullopt;  // "[Rampup Batch Size Phase]"
  StepRecord r;
  double secs = 0, tflops = 0, tokens = 0, weights = 0;
  if (!expect(s, "completed step: ")) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), r.step);
  if (ec != std::errc()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  if (!(expect(s, ", seconds: ") && number(s, secs) && expect(s, ", TFLOP/s/device: ") && number(s, tflops) &&
        expect(s, ", Tokens/s/device: ") && number(s, tokens) && expect(s, ", total_weights: ") &&
        number(s, weights) && expect(s, ", loss: ") && number(s, r.loss)))
    return std::nullopt;
  if (!s.empty() && s.front() != ',' && s.front() != '\r' && s.front() != ' ') return std::nullopt;
  r.seconds = secs;
  r.tflops_per_device = tflops;
  r.tokens_per_device = tokens;
  r.total_weights = weights;
  return r;
}

using Parser = std::optional<LogEvent> (*)(std::string_view line);

// A LogEvent carrying one parsed value (nullopt when the value did not parse).
template <typename T>
std::optional<LogEvent> event_with(std::optional<T> LogEvent::*field, const std::optional<T>& v) {
  if (!v) return std::nullopt;
  LogEvent ev;
  ev.*field = v;
  return ev;
}
std::optional<LogEvent> with_step(const std::optional<StepRecord>& r) {
  return event_with(&LogEvent::step, r);
}

std::optional<LogEvent> step_line(std::string_view line) {
  auto p = line.find("completed step: ");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view s = line.substr(p);
  if (auto fast = fast_step(s)) return with_step(fast);
  // Any order, any subset: a step line of another MaxText version is still a step. It must name
  // its step and at least one figure (a NaN rate with no loss is a broken step, not a non-line).
  StepRecord r;
  std::string_view after = s.substr(std::strlen("completed step: "));
  auto step = take_int(after);
  if (!step) return std::nullopt;
  r.step = *step;
  // The training loss, whatever the version calls it: "loss: " (the total, with an MTP or MoE
  // term), else a multi-token-prediction run's "main_model_loss: ", else "lm_loss: ".
  auto loss = field(s, "loss: ");
  if (!loss) loss = field(s, "main_model_loss: ");
  if (!loss) loss = field(s, "lm_loss: ");
  r.loss_logged = loss.has_value();
  r.loss = loss.value_or(0.0);
  r.seconds = field(s, "seconds: ");
  // A fork's rate instead of a time: a step takes 1 / steps/s.
  if (const auto rate = field(s, "steps/s: "); !r.seconds && rate && *rate > 0) r.seconds = 1 / *rate;
  r.tflops_per_device = field(s, "TFLOP/s/device: ");
  if (!r.tflops_per_device) r.tflops_per_device = field(s, "TFLOP/s: ");  // 2023: per device too
  r.tokens_per_device = field(s, "Tokens/s/device: ");
  r.total_weights = field(s, "total_weights: ");
  if (!loss && !r.seconds && !r.tflops_per_device && !r.tokens_per_device) return std::nullopt;
  r.rampup = contains(line, "[Rampup Batch Size Phase]");
  return with_step(r);
}

std::optional<LogEvent> profiler_line(std::string_view line) {
  auto p = line.find("completed profiler activation/deactivation step: ");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view s = line.substr(p);
  std::string_view after = s.substr(std::strlen("completed profiler activation/deactivation step: "));
  auto step = take_int(after);
  auto loss = field(s, "loss: ");
  if (!step || !loss) return std::nullopt;
  StepRecord r;
  r.step = *step;
  r.loss = *loss;
  r.profiler_boundary = true;
  r.rampup = contains(line, "[Rampup Batch Size Phase]");
  r.total_weights = field(s, "total_weights: ");
  return with_step(r);
}

std::optional<LogEvent> eval_after(std::string_view line, std::string_view needle) {
  auto step = int_after(line, needle);
  if (!step) return std::nullopt;
  auto p = line.find("loss=");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(p + 5);
  auto loss = take_number(rest);
  if (!loss) return std::nullopt;
  LogEvent ev;
  ev.eval = EvalRecord{*step, *loss};
  return ev;
}
std::optional<LogEvent> eval_line(std::string_view line) {
  return eval_after(line, "Completed eval after train step ");
}
std::optional<LogEvent> old_eval_line(std::string_view line) {
  return eval_after(line, "eval metrics after step: ");
}

std::optional<LogEvent> checkpoint_at(std::string_view line, std::string_view needle,
                                      CheckpointEventKind kind) {
  auto step = int_after(line, needle);
  if (!step) return std::nullopt;
  LogEvent ev;
  ev.checkpoint = CheckpointEvent{kind, *step, 0.0};
  return ev;
}
std::optional<LogEvent> saved_line(std::string_view line) {
  return checkpoint_at(line, "Saved a checkpoint at step ", CheckpointEventKind::Saved);
}
std::optional<LogEvent> save_started_line(std::string_view line) {
  return checkpoint_at(line, "Started an asynchronous checkpoint save for step ",
                       CheckpointEventKind::SaveStarted);
}
std::optional<LogEvent> restored_line(std::string_view line) {
  return checkpoint_at(line, "restoring from this run's directory step ", CheckpointEventKind::Restored);
}

// Orbax: "[async] Finished save (blocking + background) in S seconds @ DIR/STEP" (async) or
// "[sync] Finished save in S seconds @ DIR/STEP"; "[sync] Finished load in S seconds @ DIR/STEP".
std::optional<LogEvent> with_checkpoint(const std::optional<CheckpointEvent>& c) {
  return event_with(&LogEvent::checkpoint, c);
}
std::optional<LogEvent> save_duration_line(std::string_view line) {
  if (auto d = orbax_duration(line, "Finished save (blocking + background) in ",
                              CheckpointEventKind::SaveDuration))
    return with_checkpoint(d);
  return with_checkpoint(orbax_duration(line, "Finished save in ", CheckpointEventKind::SaveDuration));
}
std::optional<LogEvent> load_duration_line(std::string_view line) {
  return with_checkpoint(orbax_duration(line, "Finished load in ", CheckpointEventKind::LoadDuration));
}

std::optional<LogEvent> abort_line(std::string_view line) {
  auto p = line.find("Aborting training due to ");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(p + std::strlen("Aborting training due to "));
  LogEvent ev;
  ev.abort = std::string(rest.substr(0, rest.find(' ')));
  return ev;
}

// pyconfig.py: "Config param <key>: <value>" — MaxText's effective config, one key a line.
std::optional<LogEvent> config_param_line(std::string_view line) {
  auto p = line.find("] Config param ");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(p + std::strlen("] Config param "));
  auto colon = rest.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view value = rest.substr(colon + 2);
  while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.remove_suffix(1);
  LogEvent ev;
  ev.config_param = std::make_pair(std::string(rest.substr(0, colon)), std::string(value));
  return ev;
}

std::optional<LogEvent> memstats_line(std::string_view line) {
  auto p = line.find("Using (GB) ");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(p + std::strlen("Using (GB) "));
  auto used = take_number(rest);
  auto slash = rest.find('/');
  if (!used || slash == std::string_view::npos) return std::nullopt;
  rest = rest.substr(slash + 1);
  LogEvent ev;
  ev.memory_used_gb = used;
  ev.memory_limit_gb = take_number(rest);
  return ev;
}

// nsys's "Capture range started/ended in the application.", the JAX profiler's "Profiler
// session started." / "Profiler session tear down.".
std::optional<LogEvent> profiler_edge(std::string_view line, MarkerKind kind, std::string_view a,
                                      std::string_view b) {
  if (!contains(line, a) && !contains(line, b)) return std::nullopt;
  LogEvent ev;
  ev.profiler = kind;
  return ev;
}
std::optional<LogEvent> capture_started_line(std::string_view line) {
  return profiler_edge(line, MarkerKind::ProfilerStart, "Capture range started in the application",
                       "Profiler session started");
}
std::optional<LogEvent> capture_ended_line(std::string_view line) {
  return profiler_edge(line, MarkerKind::ProfilerEnd, "Capture range ended in the application",
                       "Profiler session tear down");
}

std::optional<LogEvent> run_mark_line(std::string_view line) {
  return event_with(&LogEvent::run_mark, parse_run_mark(line));
}

// Each kind of line: the needle whose presence makes a line worth parsing, and its parser. In
// the order they are tried on a line of unknown kind.
struct LineKind {
  const char* needle;
  Parser parse;
};
constexpr LineKind kKinds[] = {
    {"completed step: ", step_line},
    {"completed profiler activation/deactivation step: ", profiler_line},
    {"Completed eval after train step ", eval_line},
    {"eval metrics after step: ", old_eval_line},
    {"Saved a checkpoint at step ", saved_line},
    {"Started an asynchronous checkpoint save for step ", save_started_line},
    {"restoring from this run's directory step ", restored_line},
    {"Finished save", save_duration_line},
    {"Finished load in ", load_duration_line},
    {"Aborting training due to ", abort_line},
    {"Config param ", config_param_line},
    {"Using (GB) ", memstats_line},
    {"Capture range started in the application", capture_started_line},
    {"Profiler session started", capture_started_line},
    {"Capture range ended in the application", capture_ended_line},
    {"Profiler session tear down", capture_ended_line},
    {kRunMarkNeedles[0], run_mark_line},
    {kRunMarkNeedles[1], run_mark_line},
    {kRunMarkNeedles[2], run_mark_line},
    {kRunMarkNeedles[3], run_mark_line},
    {kRunMarkNeedles[4], run_mark_line},
};

}  // namespace

std::optional<StepRecord> parse_step_line(std::string_view from_needle) {
  if (auto r = fast_step(from_needle)) return r;
  auto ev = step_line(from_needle);
  if (ev) return ev->step;
  return std::nullopt;
}

const std::vector<std::string>& maxtext_line_needles() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> n;
    for (const auto& k : kKinds) n.emplace_back(k.needle);
    return n;
  }();
  return v;
}

std::optional<LogEvent> parse_maxtext_event(std::size_t needle, std::string_view line) {
  if (needle >= std::size(kKinds)) return std::nullopt;
  return kKinds[needle].parse(line);
}

std::optional<LogEvent> parse_maxtext_line(std::string_view line) {
  for (const auto& k : kKinds)
    if (auto ev = k.parse(line)) return ev;
  return std::nullopt;
}

std::string host_of_prefix(std::string_view p) {
  while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
  if (p.empty()) return {};
  if (p.front() == '(') {  // Ray: "(run_maxtext_train pid=78967, ip=10.130.0.11) "
    const auto close = p.find(')');
    const auto ip = p.find("ip=");
    if (close != std::string_view::npos && ip != std::string_view::npos && ip < close)
      return std::string(p.substr(ip + 3, close - ip - 3));
    return {};
  }
  if (p.front() == '[') {
    const auto close = p.find(']');
    if (close == std::string_view::npos) return {};
    std::string_view in = p.substr(1, close - 1);
    if (in.substr(0, 4) == "pod/") {  // kubectl logs --prefix: "[pod/NAME/CONTAINER]"
      in.remove_prefix(4);
      return std::string(in.substr(0, in.find('/')));
    }
    const auto comma = in.find(',');  // Open MPI --tag-output: "[1,3]<stdout>:"
    if (comma != std::string_view::npos && p.substr(close + 1, 4) == "<std" &&
        in.find_first_not_of("0123456789,") == std::string_view::npos)
      return "rank " + std::string(in.substr(comma + 1));
    return {};
  }
  // srun --label: "3: "
  const auto colon = p.find(": ");
  if (colon != std::string_view::npos && colon > 0 &&
      p.substr(0, colon).find_first_not_of("0123456789") == std::string_view::npos)
    return "task " + std::string(p.substr(0, colon));
  return {};
}

std::optional<NonFinite> first_nonfinite(const StepRecord& r) {
  if (r.loss_logged && !std::isfinite(r.loss)) return NonFinite{"loss", r.loss};
  for (const auto& [name, v] :
       {std::pair{"TFLOP/s/device", r.tflops_per_device}, std::pair{"Tokens/s/device", r.tokens_per_device}})
    if (v && !std::isfinite(*v)) return NonFinite{name, *v};
  return std::nullopt;
}

}  // namespace cvs
