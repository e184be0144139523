#include "cvs/maxtext_log.hpp"

#include <cmath>
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
    // the name must start a field: at the line start or after ", "
    if (pos == 0 || (pos >= 2 && s[pos - 2] == ',' && s[pos - 1] == ' ')) {
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

}  // namespace

const std::vector<std::string>& maxtext_line_needles() {
  static const std::vector<std::string> v = {
      "completed step: ",
      "completed profiler activation/deactivation step: ",
      "Completed eval after train step ",
      "eval metrics after step: ",
      "Saved a checkpoint at step ",
      "Started an asynchronous checkpoint save for step ",
      "restoring from this run's directory step ",
      "Finished save",
      "Finished load in ",
      "Aborting training due to ",
      "Using (GB) ",
      "Config param ",
  };
  return v;
}

std::optional<LogEvent> parse_maxtext_line(std::string_view line) {
  LogEvent ev;
  if (auto p = line.find("completed step: "); p != std::string_view::npos) {
    std::string_view s = line.substr(p);
    StepRecord r;
    std::string_view after = s.substr(std::strlen("completed step: "));
    auto step = take_int(after);
    auto loss = field(s, "loss: ");
    if (!step || !loss) return std::nullopt;
    r.step = *step;
    r.loss = *loss;
    r.seconds = field(s, "seconds: ");
    r.tflops_per_device = field(s, "TFLOP/s/device: ");
    r.tokens_per_device = field(s, "Tokens/s/device: ");
    r.total_weights = field(s, "total_weights: ");
    r.rampup = contains(line, "[Rampup Batch Size Phase]");
    ev.step = r;
    return ev;
  }
  if (auto p = line.find("completed profiler activation/deactivation step: "); p != std::string_view::npos) {
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
    ev.step = r;
    return ev;
  }
  if (auto step = int_after(line, "Completed eval after train step ")) {
    auto p = line.find("loss=");
    if (p == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(p + 5);
    auto loss = take_number(rest);
    if (!loss) return std::nullopt;
    ev.eval = EvalRecord{*step, *loss};
    return ev;
  }
  if (auto step = int_after(line, "eval metrics after step: ")) {
    auto p = line.find("loss=");
    if (p == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(p + 5);
    auto loss = take_number(rest);
    if (!loss) return std::nullopt;
    ev.eval = EvalRecord{*step, *loss};
    return ev;
  }
  if (auto step = int_after(line, "Saved a checkpoint at step ")) {
    ev.checkpoint = CheckpointEvent{CheckpointEventKind::Saved, *step, 0.0};
    return ev;
  }
  if (auto step = int_after(line, "Started an asynchronous checkpoint save for step ")) {
    ev.checkpoint = CheckpointEvent{CheckpointEventKind::SaveStarted, *step, 0.0};
    return ev;
  }
  if (auto step = int_after(line, "restoring from this run's directory step ")) {
    ev.checkpoint = CheckpointEvent{CheckpointEventKind::Restored, *step, 0.0};
    return ev;
  }
  // Orbax: "[async] Finished save (blocking + background) in S seconds @ DIR/STEP" (async) or
  // "[sync] Finished save in S seconds @ DIR/STEP"; "[sync] Finished load in S seconds @ DIR/STEP".
  if (auto d = orbax_duration(line, "Finished save (blocking + background) in ",
                              CheckpointEventKind::SaveDuration)) {
    ev.checkpoint = d;
    return ev;
  }
  if (auto d = orbax_duration(line, "Finished save in ", CheckpointEventKind::SaveDuration)) {
    ev.checkpoint = d;
    return ev;
  }
  if (auto d = orbax_duration(line, "Finished load in ", CheckpointEventKind::LoadDuration)) {
    ev.checkpoint = d;
    return ev;
  }
  if (auto p = line.find("Aborting training due to "); p != std::string_view::npos) {
    std::string_view rest = line.substr(p + std::strlen("Aborting training due to "));
    auto sp = rest.find(' ');
    ev.abort = std::string(rest.substr(0, sp));
    return ev;
  }
  if (auto p = line.find("] Config param "); p != std::string_view::npos) {
    // pyconfig.py: "Config param <key>: <value>" — MaxText's effective config, one key a line.
    std::string_view rest = line.substr(p + std::strlen("] Config param "));
    auto colon = rest.find(": ");
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view value = rest.substr(colon + 2);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.remove_suffix(1);
    ev.config_param = std::make_pair(std::string(rest.substr(0, colon)), std::string(value));
    return ev;
  }
  if (auto p = line.find("Using (GB) "); p != std::string_view::npos) {
    std::string_view rest = line.substr(p + std::strlen("Using (GB) "));
    auto used = take_number(rest);
    auto slash = rest.find('/');
    if (!used || slash == std::string_view::npos) return std::nullopt;
    rest = rest.substr(slash + 1);
    ev.memory_used_gb = used;
    ev.memory_limit_gb = take_number(rest);
    return ev;
  }
  return std::nullopt;
}

}  // namespace cvs
