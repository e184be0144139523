#include "cvs/logs/logscan.hpp"

#include "cvs/logs/background_sink.hpp"

#include <hs/hs.h>
#include <re2/re2.h>
#include <spdlog/spdlog.h>
#include <string.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace cvs {
namespace {

// A literal as a Vectorscan pattern: every byte that is not alphanumeric as \xHH.
std::string hs_literal(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch)) {
      out += static_cast<char>(ch);
    } else {
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

// Newlines in [p, end): memchr runs at memory speed; the count is what line numbers need.
long long count_newlines(const char* p, const char* end) {
  long long n = 0;
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (!nl) break;
    ++n;
    p = static_cast<const char*>(nl) + 1;
  }
  return n;
}

constexpr unsigned kEventBase = 1u << 20;  // Vectorscan ids: error patterns below, event needles above

struct ScanHit {
  std::size_t to;  // one past the match's last byte
  unsigned id;
};

int on_hs_match(unsigned id, unsigned long long, unsigned long long to, unsigned, void* ctx) {
  static_cast<std::vector<ScanHit>*>(ctx)->push_back({static_cast<std::size_t>(to), id});
  return 0;
}

}  // namespace

// The patterns of one error-pattern list, compiled once per process and shared by every scanner
// of that list (a suite follows one log per node: the database is built once, not per node).
// One Vectorscan database: every error pattern it compiles (caseless, ^/$ at line ends) and the
// MaxText event needles (exact). Patterns it refuses are matched by RE2 (fallback_any); each
// candidate error line is confirmed per pattern with RE2, in the configured order. RE2 and a
// Vectorscan database are safe to share between threads; each scanner has its own scratch.
struct CompiledPatterns {
  hs_database_t* db = nullptr;
  std::vector<std::size_t> needle_len;
  std::size_t step_needle = 0;
  std::unique_ptr<RE2> fallback_any;
  std::vector<std::pair<std::string, std::unique_ptr<RE2>>> each_error;
  ~CompiledPatterns() {
    if (db) hs_free_database(db);
  }
};

namespace {

std::shared_ptr<const CompiledPatterns> compile_patterns(const std::vector<ErrorPattern>& patterns) {
  auto c = std::make_shared<CompiledPatterns>();
  RE2::Options err_opt;
  err_opt.set_log_errors(false);
  err_opt.set_max_mem(64 << 20);
  // Error patterns match case-insensitively, as CVS's re.search(pattern, line, re.I) does: a
  // pattern written for CVS catches "NCCL Error" and "nccl error" alike. MaxText's own event
  // lines are matched exactly.
  err_opt.set_case_sensitive(false);
  std::vector<std::string> exprs;
  std::vector<unsigned> flags, ids;
  std::string fallback;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const auto& p = patterns[i];
    auto re = std::make_unique<RE2>(p.regex, err_opt);
    if (!re->ok()) throw std::invalid_argument("invalid error pattern '" + p.name + "': " + re->error());
    c->each_error.emplace_back(p.name, std::move(re));
    const unsigned f = HS_FLAG_CASELESS | HS_FLAG_MULTILINE;
    hs_database_t* probe = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile(p.regex.c_str(), f, HS_MODE_BLOCK, nullptr, &probe, &err) == HS_SUCCESS) {
      hs_free_database(probe);
      exprs.push_back(p.regex);
      flags.push_back(f);
      ids.push_back(static_cast<unsigned>(i));
    } else {
      spdlog::warn("error pattern '{}' ({}) is matched by RE2 instead of Vectorscan, slower: {}", p.name,
                   p.regex, err ? err->message : "refused");
      fallback += (fallback.empty() ? "" : "|") + ("(?:" + p.regex + ")");
    }
    if (err) hs_free_compile_error(err);
  }
  if (!fallback.empty()) c->fallback_any = std::make_unique<RE2>(fallback, err_opt);
  const auto& needles = maxtext_line_needles();
  for (std::size_t j = 0; j < needles.size(); ++j) {
    exprs.push_back(hs_literal(needles[j]));
    flags.push_back(0);
    ids.push_back(kEventBase + static_cast<unsigned>(j));
    c->needle_len.push_back(needles[j].size());
    if (needles[j] == "completed step: ") c->step_needle = j;
  }
  std::vector<const char*> cexprs;
  for (const auto& e : exprs) cexprs.push_back(e.c_str());
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(cexprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()),
                       HS_MODE_BLOCK, nullptr, &c->db, &err) != HS_SUCCESS) {
    std::string why = err ? err->message : "unknown";
    if (err) hs_free_compile_error(err);
    throw std::runtime_error("Vectorscan could not compile the log patterns: " + why);
  }
  return c;
}

std::shared_ptr<const CompiledPatterns> shared_patterns(const std::vector<ErrorPattern>& patterns) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const CompiledPatterns>> cache;
  std::string key;
  for (const auto& p : patterns) key += p.name + '\0' + p.regex + '\0';
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) slot = compile_patterns(patterns);
  return slot;
}

}  // namespace

struct LogScanner::Impl {
  std::shared_ptr<const CompiledPatterns> p;
  hs_scratch_t* scratch = nullptr;
  std::vector<ScanHit> hits;
  ~Impl() {
    if (scratch) hs_free_scratch(scratch);
  }
};

LogScanner::LogScanner(const std::vector<ErrorPattern>& patterns) : impl_(std::make_unique<Impl>()) {
  impl_->p = shared_patterns(patterns);
  if (hs_alloc_scratch(impl_->p->db, &impl_->scratch) != HS_SUCCESS)
    throw std::runtime_error("Vectorscan could not allocate its scratch space");
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
  std::size_t from = 0;
  if (!pending_.empty()) {
    // Only the line that straddles the two blocks is joined; the rest is scanned in place.
    const auto first_nl = data.find('\n');
    pending_.append(data.substr(0, first_nl + 1));
    std::string line;
    line.swap(pending_);
    process(line);
    from = first_nl + 1;
  }
  if (from < last_nl + 1) process(data.substr(from, last_nl + 1 - from));
  pending_.assign(data.substr(last_nl + 1));
}

namespace {

// The "name: value" fields of a step line from its "completed step: " on.
std::size_t fields_of(std::string_view step_line) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = step_line.find(": ", at)) != std::string_view::npos; at += 2) ++n;
  return n;
}

}  // namespace

void LogScanner::finish(bool parse_last_line) {
  if (pending_.empty()) return;
  // A finished file's last line counts without its newline only when it is whole: a step line
  // with fewer fields than the ones before it was cut mid-write.
  if (const auto at = pending_.find("completed step: ");
      parse_last_line && at != std::string::npos &&
      fields_of(std::string_view(pending_).substr(at)) < fields_of(last_step_line_)) {
    parse_last_line = false;
    result_.cut_last_line = pending_.substr(0, 1000);
  }
  std::string chunk;
  chunk.swap(pending_);
  chunk += '\n';
  // A last line without its newline was cut mid-write (the writer died): "loss: 5.9" may be
  // "loss: 5.905". It is still searched for errors, never parsed as a value, unless the file is
  // known to be finished (a log copied or pasted without its last newline).
  process(chunk, parse_last_line);
}

// Vectorscan's matches in one chunk of whole lines, plus the RE2 fallback's, by end offset.
void LogScanner::collect_hits(std::string_view chunk) {
  auto& hits = impl_->hits;
  hits.clear();
  if (hs_scan(impl_->p->db, chunk.data(), static_cast<unsigned>(chunk.size()), 0, impl_->scratch, on_hs_match,
              &hits) != HS_SUCCESS)
    throw std::runtime_error("Vectorscan scan failed");
  if (impl_->p->fallback_any) {
    re2::StringPiece input(chunk.data(), chunk.size()), match;
    for (std::size_t pos = 0; pos < chunk.size();) {
      if (!impl_->p->fallback_any->Match(input, pos, chunk.size(), RE2::UNANCHORED, &match, 1)) break;
      const std::size_t at = static_cast<std::size_t>(match.data() - chunk.data());
      const std::size_t le = chunk.find('\n', at);
      hits.push_back({std::max(at + match.size(), at + 1), 0});  // id 0: an error candidate
      pos = le == std::string_view::npos ? chunk.size() : le + 1;
    }
  }
  const auto by_end = [](const ScanHit& a, const ScanHit& b) { return a.to < b.to; };
  if (!std::is_sorted(hits.begin(), hits.end(), by_end)) std::stable_sort(hits.begin(), hits.end(), by_end);
}

// One line with at least one hit: confirm an error candidate per pattern (the first of the
// configured order that matches names it), then parse its MaxText event.
void LogScanner::on_hit_line(const HitLine& h, long long line_no, bool events) {
  std::string_view line = h.text;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (h.error && result_.errors.size() < ScanResult::kMaxErrors)
    for (const auto& [name, re] : impl_->p->each_error)
      if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *re)) {
        result_.errors.push_back({name, std::string(line.substr(0, 1000)), line_no});
        break;
      }
  if (events && h.event >= 0) on_event(line, static_cast<std::size_t>(h.event), h.event_at, line_no);
}

void LogScanner::process(std::string_view chunk, bool events) {
  // chunk holds whole lines, each ending in '\n'. Hits come by end offset: those on one line
  // are gathered into one HitLine; lines are counted only up to each hit line, then once to the end.
  collect_hits(chunk);
  const char* base = chunk.data();
  const char* counted_to = base;
  long long line_no = result_.lines + 1;
  std::optional<HitLine> cur;
  std::size_t cur_start = 0, cur_end = 0;
  auto flush = [&] {
    if (!cur) return;
    line_no += count_newlines(counted_to, base + cur_start);
    counted_to = base + cur_start;
    on_hit_line(*cur, line_no, events);
  };
  for (const auto& h : impl_->hits) {
    const std::size_t last = h.to == 0 ? 0 : h.to - 1;  // the match's last byte
    if (!cur || last < cur_start || last > cur_end) {
      flush();
      const void* nl = last == 0 ? nullptr : ::memrchr(base, '\n', last);
      cur_start = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - base) + 1 : 0;
      const void* e = std::memchr(base + last, '\n', chunk.size() - last);
      cur_end = e ? static_cast<std::size_t>(static_cast<const char*>(e) - base) : chunk.size();
      cur = HitLine{chunk.substr(cur_start, cur_end - cur_start), false, -1, 0};
    }
    if (h.id < kEventBase) {
      cur->error = true;
    } else if (cur->event < 0) {
      cur->event = static_cast<long>(h.id - kEventBase);
      cur->event_at = h.to - impl_->p->needle_len[static_cast<std::size_t>(cur->event)] - cur_start;
    }
  }
  flush();
  // The lines before the last hit line are counted already (line_no): only the rest once more.
  result_.lines = line_no - 1 + count_newlines(counted_to, base + chunk.size());
}

void LogScanner::on_event(std::string_view line, std::size_t needle, std::size_t at, long long line_no) {
  if (needle == impl_->p->step_needle) {
    if (auto r = parse_step_line(line.substr(at))) {
      last_step_line_.assign(line.substr(at));
      r->line_no = line_no;
      if (at > 0) r->host = host_of_prefix(line.substr(0, at));
      if (auto t = glog_seconds(line.substr(0, at))) result_.timeline.step(*t, r->seconds);
      take_step(std::move(*r));
    }
    return;
  }
  if (auto ev = parse_maxtext_event(needle, line)) {
    if (ev->run_mark) result_.timeline.mark(*ev->run_mark, glog_seconds(line));
    if (ev->checkpoint && (ev->checkpoint->kind == CheckpointEventKind::SaveDuration ||
                           ev->checkpoint->kind == CheckpointEventKind::LoadDuration))
      if (auto t = glog_seconds(line)) result_.timeline.checkpoint_io(*t, ev->checkpoint->seconds);
    if (ev->step) {
      ev->step->line_no = line_no;
      if (at > 0) ev->step->host = host_of_prefix(line.substr(0, at));
    }
    record(std::move(*ev), line_no);
  }
}

void LogScanner::take_step(StepRecord&& r) {
  if (sink_)
    sink_->step(std::move(r));
  else
    result_.steps.push_back(std::move(r));
}

void LogScanner::record(LogEvent&& ev, long long line_no) {
  if (ev.step) take_step(std::move(*ev.step));
  if (ev.eval) {
    result_.evals.push_back(*ev.eval);
    if (sink_) sink_->eval(*ev.eval);
  }
  std::optional<StepMarker> marker;
  if (ev.checkpoint) {
    result_.checkpoints.push_back(*ev.checkpoint);
    const auto k = ev.checkpoint->kind;
    if ((k == CheckpointEventKind::SaveStarted || k == CheckpointEventKind::Saved) &&
        ev.checkpoint->step >= 0)
      marker = StepMarker{MarkerKind::CheckpointSave, ev.checkpoint->step, line_no};
  }
  if (ev.profiler) marker = StepMarker{*ev.profiler, -1, line_no};
  if (marker) {
    result_.markers.push_back(*marker);
    if (sink_) sink_->marker(*marker);
  }
  if (ev.abort && !result_.abort) result_.abort = ev.abort;
  if (ev.config_param) result_.effective_config[ev.config_param->first] = ev.config_param->second;
  if (ev.memory_used_gb) {
    result_.peak_memory_gb = std::max(result_.peak_memory_gb.value_or(0.0), *ev.memory_used_gb);
    if (ev.memory_limit_gb) result_.memory_limit_gb = ev.memory_limit_gb;
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

ScanResult scan_log_file(const std::filesystem::path& path, const std::vector<ErrorPattern>& patterns,
                         RecordSink* sink) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("cannot read log " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read log " + path.string());
  LogScanner scanner(patterns);
  // With a sink, the figures are taken on a second core while this one scans.
  std::optional<BackgroundSink> background;
  if (sink) scanner.set_sink(&background.emplace(*sink));
  // read() in 4 MiB blocks, not mmap (mapped pages would count in the resident set as the whole
  // file), by a reader thread one block ahead of the scan: the kernel's copy overlaps the scan.
  constexpr std::size_t kBlock = 4 << 20;
  std::string blocks[2] = {std::string(kBlock, '\0'), std::string(kBlock, '\0')};
  std::size_t got[2] = {0, 0};
  bool ready[2] = {false, false}, done = false;
  std::mutex mu;
  std::condition_variable cv;
  std::thread reader([&] {
    for (int k = 0;; k ^= 1) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !ready[k] || done; });
        if (done) return;
      }
      in.read(blocks[k].data(), static_cast<std::streamsize>(kBlock));
      const auto n = static_cast<std::size_t>(in.gcount());
      std::lock_guard lock(mu);
      got[k] = n;
      ready[k] = true;
      cv.notify_all();
      if (n == 0) return;
    }
  });
  try {
    for (int k = 0;; k ^= 1) {
      std::size_t n;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return ready[k]; });
        n = got[k];
      }
      if (n == 0) break;
      scanner.feed(std::string_view(blocks[k].data(), n));
      std::lock_guard lock(mu);
      ready[k] = false;
      cv.notify_all();
    }
  } catch (...) {
    {
      std::lock_guard lock(mu);
      done = true;
      cv.notify_all();
    }
    reader.join();
    throw;
  }
  reader.join();
  scanner.finish(/*parse_last_line=*/true);  // a whole file: its last line counts, newline or not
  if (background) background->close();
  return scanner.take_result();
}

std::string ScanResult::cut_last_line_note(const std::string& log) const {
  if (cut_last_line.empty()) return "";
  return log +
         ": its last line has no newline and fewer fields than the step lines before it: cut mid-write, "
         "left out ('" +
         cut_last_line.substr(0, 160) + "')";
}

}  // namespace cvs
