#include "cvs/exec/node_tracker.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cvs/exec/node_agent.hpp"

namespace fs = std::filesystem;

namespace cvs {

namespace {

// The last 64 KiB of a file (its last lines; a multi-GB log is never read whole for them).
std::string read_tail(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<long long>(in.tellg());
  if (size <= 0) return "";
  const long long from = std::max(0LL, size - 64 * 1024);
  in.seekg(from);
  std::string s(static_cast<std::size_t>(size - from), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(in.gcount()));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string last_lines(const std::string& text, std::size_t n) {
  std::size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n')) --pos;
  std::size_t start = pos;
  for (std::size_t k = 0; k < n && start > 0; ++k) {
    start = text.rfind('\n', start - 1);
    if (start == std::string::npos) {
      start = 0;
      break;
    }
  }
  std::string s = text.substr(start, pos - start);
  if (!s.empty() && s.front() == '\n') s.erase(0, 1);
  return s;
}

std::string NodeTracker::kernel_failure(const std::string& node) const {
  const auto* k = kernel_failed ? telemetry.kernel_failure() : nullptr;
  if (!k) return "";
  const auto device = k->device();
  return node + ": kernel log: " + k->meaning() + (device.empty() ? "" : " (" + device + ")") + ": '" +
         k->text + "'";
}

const std::string& NodeTracker::check_finite(const std::string& node) {
  const auto& steps = scanner->result().steps;
  for (; nan_checked < steps.size() && nan_seen.empty(); ++nan_checked) {
    const auto& st = steps[nan_checked];
    if (const auto bad = first_nonfinite(st))
      nan_seen = node + ": non-finite " + bad->field + " (" + std::to_string(bad->value) + ") at step " +
                 std::to_string(st.step) +
                 (st.line_no ? " (" + log + " line " + std::to_string(st.line_no) + ")" : "");
  }
  return nan_seen;
}

std::string NodeTracker::death(const NodeOutcome& no, bool stop_sent) const {
  // Killed (SIGKILL: exit 137, or gone) with an OOM kill in the node's kernel log during the run:
  // the OOM killer, said as such (a run this suite stopped ends "stopped", never here).
  const bool killed = no.state == NodeState::Gone || (no.state == NodeState::Exited && no.exit_code == 137);
  if (killed)
    for (const auto& k : telemetry.kernel())
      if (k.pattern && k.pattern->kind == KernelPattern::Kind::OomKill)
        return no.node + ": the training was killed by the kernel's OOM killer (out of memory): '" + k.text +
               "'; last step " + (no.last_step ? std::to_string(*no.last_step) : std::string("none")) +
               ", log " + log;
  if (no.state == NodeState::Gone)
    return no.node + ": the training process is gone without an exit code (killed?); last step " +
           (no.last_step ? std::to_string(*no.last_step) : std::string("none")) + ", log " + log;
  if (no.state == NodeState::Stopped && !stop_sent)
    return no.node + ": the run was stopped from outside this suite (" + pid + ".stopped exists)";
  if (const auto ended = warm_trainer_end(no); !ended.empty())
    return no.node + ": " + ended + " (the OOM killer picks the process that holds MaxText imported)" +
           "; last step " + (no.last_step ? std::to_string(*no.last_step) : std::string("none")) + ", log " +
           log;
  if (no.state == NodeState::Exited && no.exit_code != 0) {
    copy->flush();
    return no.node + ": training exited with code " + std::to_string(no.exit_code) + "; last lines of " +
           log + ":\n" + last_lines(read_tail(no.local_log), 5);
  }
  return "";
}

std::string NodeTracker::warm_trainer_end(const NodeOutcome& no) const {
  if (no.state != NodeState::Exited || no.exit_code != agent::kExitWarmTrainerEnded) return "";
  copy->flush();
  const auto tail = last_lines(read_tail(no.local_log), 3);
  const auto at = tail.rfind(agent::kWarmTrainerEndedLine);
  if (at == std::string::npos) return "";
  const auto from = at + std::string_view("cvs-warm: ").size();
  const auto eol = tail.find('\n', at);
  return tail.substr(from, eol == std::string::npos ? std::string::npos : eol - from);
}

}  // namespace cvs
