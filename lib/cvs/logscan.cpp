#include "cvs/logscan.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace cvs {
namespace {

std::string quote_literal(const std::string& s) {
  return RE2::QuoteMeta(s);
}

}  // namespace

struct LogScanner::Impl {
  // One DFA pass finds candidate lines for errors; one finds MaxText event lines.
  std::unique_ptr<RE2> any_error;
  std::vector<std::pair<std::string, std::unique_ptr<RE2>>> each_error;
  std::unique_ptr<RE2> any_event;
};

LogScanner::LogScanner(const std::vector<ErrorPattern>& patterns) : impl_(std::make_unique<Impl>()) {
  RE2::Options opt;
  opt.set_log_errors(false);
  opt.set_max_mem(64 << 20);
  // Error patterns match case-insensitively, as CVS's re.search(pattern, line, re.I) does: a
  // pattern written for CVS catches "NCCL Error" and "nccl error" alike. MaxText's own event
  // lines are matched exactly.
  RE2::Options err_opt = opt;
  err_opt.set_case_sensitive(false);
  std::string all;
  for (const auto& p : patterns) {
    auto re = std::make_unique<RE2>(p.regex, err_opt);
    if (!re->ok()) throw std::invalid_argument("invalid error pattern '" + p.name + "': " + re->error());
    if (!all.empty()) all += '|';
    all += "(?:" + p.regex + ")";
    impl_->each_error.emplace_back(p.name, std::move(re));
  }
  if (!all.empty()) impl_->any_error = std::make_unique<RE2>(all, err_opt);
  std::string ev;
  for (const auto& n : maxtext_line_needles()) {
    if (!ev.empty()) ev += '|';
    ev += quote_literal(n);
  }
  impl_->any_event = std::make_unique<RE2>(ev, opt);
}

LogScanner::~LogScanner() = default;
LogScanner::LogScanner(LogScanner&&) noexcept = default;
LogScanner& LogScanner::operator=(LogScanner&&) noexcept = default;

void LogScanner::feed(std::string_view data) {
  result_.bytes += data.size();
  const auto last_nl = data.rfind('\n');
  if (last_nl == std::string_view::npos) {
    pending_.append(data);
    return;
  }
  if (pending_.empty()) {
    process(data.substr(0, last_nl + 1));
  } else {
    pending_.append(data.substr(0, last_nl + 1));
    std::string chunk;
    chunk.swap(pending_);
    process(chunk);
  }
  pending_.assign(data.substr(last_nl + 1));
}

void LogScanner::finish() {
  if (pending_.empty()) return;
  std::string chunk;
  chunk.swap(pending_);
  chunk += '\n';
  // A last line without its newline was cut mid-write (the writer died): "loss: 5.9" may be
  // "loss: 5.905". It is still searched for errors, never parsed as a value.
  process(chunk, false);
}

void LogScanner::process(std::string_view chunk, bool events) {
  // chunk holds whole lines, each ending in '\n'.
  const long long first_line = result_.lines + 1;
  struct Hit {
    std::size_t line_start;
    bool error;
  };
  std::vector<Hit> hits;
  auto collect = [&](const RE2& re, bool error) {
    re2::StringPiece input(chunk.data(), chunk.size());
    re2::StringPiece match;
    std::size_t pos = 0;
    while (pos < chunk.size()) {
      if (!re.Match(input, pos, chunk.size(), RE2::UNANCHORED, &match, 1)) break;
      const std::size_t at = static_cast<std::size_t>(match.data() - chunk.data());
      const std::size_t ls = chunk.rfind('\n', at == 0 ? 0 : at - 1);
      const std::size_t line_start = (at == 0 || ls == std::string_view::npos) ? 0 : ls + 1;
      hits.push_back({line_start, error});
      const std::size_t le = chunk.find('\n', at);
      pos = le == std::string_view::npos ? chunk.size() : le + 1;
    }
  };
  if (impl_->any_error) collect(*impl_->any_error, true);
  if (events) collect(*impl_->any_event, false);
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    return a.line_start != b.line_start ? a.line_start < b.line_start : a.error > b.error;
  });
  std::size_t counted_to = 0;
  long long line_no = first_line;
  for (const auto& h : hits) {
    line_no += std::count(chunk.data() + counted_to, chunk.data() + h.line_start, '\n');
    counted_to = h.line_start;
    const std::size_t le = chunk.find('\n', h.line_start);
    std::string_view line = chunk.substr(h.line_start, le - h.line_start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (h.error) {
      if (result_.errors.size() >= ScanResult::kMaxErrors) continue;
      for (const auto& [name, re] : impl_->each_error) {
        if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *re)) {
          result_.errors.push_back({name, std::string(line.substr(0, 1000)), line_no});
          break;
        }
      }
    } else {
      on_line(line, line_no);
    }
  }
  result_.lines += std::count(chunk.begin(), chunk.end(), '\n');
}

void LogScanner::on_line(std::string_view line, long long) {
  auto ev = parse_maxtext_line(line);
  if (!ev) return;
  if (ev->step) result_.steps.push_back(*ev->step);
  if (ev->eval) result_.evals.push_back(*ev->eval);
  if (ev->checkpoint) result_.checkpoints.push_back(*ev->checkpoint);
  if (ev->abort && !result_.abort) result_.abort = ev->abort;
  if (ev->config_param) result_.effective_config[ev->config_param->first] = ev->config_param->second;
  if (ev->memory_used_gb) {
    result_.peak_memory_gb = std::max(result_.peak_memory_gb.value_or(0.0), *ev->memory_used_gb);
    if (ev->memory_limit_gb) result_.memory_limit_gb = ev->memory_limit_gb;
  }
}

LogFollower::LogFollower(std::filesystem::path path, const std::vector<ErrorPattern>& patterns)
    : path_(std::move(path)), scanner_(patterns) {}

std::size_t LogFollower::poll() {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path_, ec);
  if (ec) return 0;  // not created yet
  if (size < offset_)
    throw std::runtime_error(path_.string() + " shrank from " + std::to_string(offset_) + " to " +
                             std::to_string(size) +
                             " bytes: the log was truncated or replaced during the run");
  if (size == offset_) return 0;
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset_));
  std::size_t total = 0;
  std::string buf(1 << 20, '\0');
  while (offset_ < size && in) {
    const auto want = static_cast<std::streamsize>(std::min<unsigned long long>(buf.size(), size - offset_));
    in.read(buf.data(), want);
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    scanner_.feed(std::string_view(buf.data(), got));
    offset_ += got;
    total += got;
  }
  return total;
}

ScanResult scan_log_file(const std::filesystem::path& path, const std::vector<ErrorPattern>& patterns) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("cannot read log " + path.string());
  LogFollower f(path, patterns);
  f.poll();
  f.finish();
  return f.result();
}

}  // namespace cvs
