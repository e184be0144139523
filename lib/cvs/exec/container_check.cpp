#include "cvs/exec/container_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "cvs/base/text.hpp"
#include "cvs/config/text_file.hpp"

namespace cvs {
namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

const nlohmann::json& at_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null;
  if (!j.is_object()) return null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}

std::string str_at(const nlohmann::json& j, const char* key) {
  const auto& v = at_or_null(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) v.push_back(cur);
  return v;
}

// An rlimit value as the engines print it: -1 or >= 2^63 (podman's uint64 max) is unlimited.
long long rlimit_value(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number_unsigned()) return v.get<unsigned long long>() >= (1ULL << 63) ? -1 : v.get<long long>();
  return -2;
}

long long rlimit_text(const std::string& s) {
  if (s == "-1" || s == "unlimited") return -1;
  long long v = -2;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

void check_ulimits(const nlohmann::json& host, const Container& c, std::vector<std::string>& out) {
  const auto& shown = at_or_null(host, "Ulimits");
  for (const auto& u : c.args.ulimit) {
    const auto eq = u.find('=');
    const std::string name = lower(u.substr(0, eq));
    const auto values = split(eq == std::string::npos ? "" : u.substr(eq + 1), ':');
    const long long soft = values.empty() ? -2 : rlimit_text(values[0]);
    const long long hard = values.size() > 1 ? rlimit_text(values[1]) : soft;
    bool found = false;
    if (shown.is_array())
      for (const auto& s : shown) {
        std::string n = lower(str_at(s, "Name"));
        if (n.rfind("rlimit_", 0) == 0) n = n.substr(7);
        if (n != name) continue;
        found = rlimit_value(at_or_null(s, "Soft")) == soft && rlimit_value(at_or_null(s, "Hard")) == hard;
      }
    if (!found) out.push_back("ulimit " + u + " is not in the container's limits");
  }
}

void check_mounts(const nlohmann::json& doc, const Container& c, std::vector<std::string>& out) {
  const auto& mounts = at_or_null(doc, "Mounts");
  for (const auto& vol : c.args.volumes) {
    const auto parts = split(vol, ':');
    if (parts.size() < 2) continue;  // an anonymous volume: nothing to compare
    const std::string& dst = parts[1];
    bool ro = false;
    if (parts.size() > 2)
      for (const auto& o : split(parts[2], ',')) ro |= o == "ro";
    bool found = false;
    if (mounts.is_array())
      for (const auto& m : mounts)
        if (str_at(m, "Destination") == dst) {
          found = true;
          const auto& rw = at_or_null(m, "RW");
          if (rw.is_boolean() && rw.get<bool>() == ro)
            out.push_back("volume " + vol + " is mounted " + (ro ? "read-write" : "read-only"));
        }
    if (!found) out.push_back("volume " + vol + " is not mounted at " + dst);
  }
}

void check_strings(const nlohmann::json& list, const std::vector<std::string>& want, const std::string& what,
                   std::vector<std::string>& out) {
  for (const auto& w : want) {
    bool found = false;
    if (list.is_array())
      for (const auto& v : list) found |= v.is_string() && v.get<std::string>() == w;
    if (!found) out.push_back(what + " " + w + " did not reach the container");
  }
}

}  // namespace

ExistingContainer classify_existing(bool ok, const std::string& out, const std::string& err) {
  ExistingContainer e;
  if (!ok) {
    if (lower(err + out).find("no such container") != std::string::npos) {
      e.state = ExistingContainer::State::Free;
    } else {
      e.detail = without_line_ends(err.empty() ? out : err);
    }
    return e;
  }
  nlohmann::json labels;
  try {
    labels = nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception&) {
    e.detail = "unreadable labels: " + out;
    return e;
  }
  if (!labels.is_object() || !labels.contains(kSuiteLabel)) {
    e.state = ExistingContainer::State::Foreign;
    return e;
  }
  e.state = ExistingContainer::State::Ours;
  e.session = str_at(labels, kSessionLabel);
  e.controller = str_at(labels, kControllerLabel);
  return e;
}

namespace {

// Field 22 of /proc/PID/stat: the process's start time in clock ticks since boot ("" when gone).
// Read after the last ')' (the command name may hold spaces and parentheses).
std::string start_time(const std::string& pid) {
  const auto stat = read_text_file("/proc/" + pid + "/stat");
  if (!stat) return "";
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream in(stat->substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && (in >> field); ++i) {
  }
  return in ? field : "";
}

}  // namespace

std::string controller_id(const std::string& host, long pid) {
  const std::string p = std::to_string(pid);
  return host + ":" + p + ":" + start_time(p);
}

bool controller_alive(const std::string& controller, const std::string& this_host) {
  const auto parts = split(controller, ':');
  if (parts.size() != 3 || parts[0] != this_host || parts[2].empty()) return false;
  if (parts[1] == std::to_string(::getpid())) return false;  // this session: a leftover of itself
  // The same pid and start time: that very process, not a later one that reuses the pid.
  return start_time(parts[1]) == parts[2];
}

std::optional<long long> parse_size_bytes(const std::string& s) {
  if (s.empty()) return std::nullopt;
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || v < 0) return std::nullopt;
  std::string unit = lower(std::string(end, s.data() + s.size()));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  const std::string units = "kmgt";
  if (unit.empty()) return v;
  if (unit.size() != 1 || units.find(unit[0]) == std::string::npos) return std::nullopt;
  for (std::size_t i = 0; i <= units.find(unit[0]); ++i) v *= 1024;
  return v;
}

namespace {

// HostConfig's privileged, network, ipc and shm size against the container's args.
void check_host_config(const nlohmann::json& host, const RuntimeArgs& a, Engine engine,
                       std::vector<std::string>& out) {
  if (a.privileged &&
      !(at_or_null(host, "Privileged").is_boolean() && at_or_null(host, "Privileged").get<bool>()))
    out.push_back("privileged did not reach the container");
  if (!a.network.empty() && a.network != "host" && str_at(host, "NetworkMode") != a.network)
    out.push_back("network " + a.network +
                  " did not reach the container (inspect: " + str_at(host, "NetworkMode") + ")");
  // podman 4's inspect reports IpcMode "shareable" whatever the mode: only docker's is read.
  if (engine == Engine::Docker && !a.ipc.empty() && a.ipc != "host" && str_at(host, "IpcMode") != a.ipc)
    out.push_back("ipc " + a.ipc + " did not reach the container (inspect: " + str_at(host, "IpcMode") + ")");
  if (!a.shm_size.empty() && a.ipc != "host") {  // with host IPC the size is the node's /dev/shm
    const auto want = parse_size_bytes(a.shm_size);
    const auto& got = at_or_null(host, "ShmSize");
    if (want && !(got.is_number_integer() && got.get<long long>() == *want))
      out.push_back("shm-size " + a.shm_size + " did not reach the container (inspect: " + got.dump() + ")");
  }
}
}  // namespace

std::vector<std::string> check_inspect(const nlohmann::json& inspect, const Container& c, Engine engine,
                                       const ContainerLabels& labels) {
  const nlohmann::json& doc = inspect.is_array() && !inspect.empty() ? inspect[0] : inspect;
  std::vector<std::string> out;
  const auto& host = at_or_null(doc, "HostConfig");
  const auto& config = at_or_null(doc, "Config");
  check_host_config(host, c.args, engine, out);
  check_ulimits(host, c, out);
  check_mounts(doc, c, out);
  std::vector<std::string> env;
  for (const auto& [k, v] : c.env) env.push_back(k + "=" + v);
  check_strings(at_or_null(config, "Env"), env, "env", out);
  check_strings(at_or_null(host, "GroupAdd"), c.args.group_add, "group-add", out);
  const auto& shown = at_or_null(config, "Labels");
  for (const auto& [k, v] : labels.to_list())
    if (str_at(shown, k.c_str()) != v) out.push_back("label " + k + "=" + v + " is not on the container");
  return out;
}

std::vector<std::string> namespace_probe_argv(const Container& c) {
  std::vector<std::string> v = {
      "sh", "-c",
      "readlink /proc/self/ns/net /proc/self/ns/ipc || exit 1; for d do [ -e \"$d\" ] "
      "|| echo \"CVS-MISSING $d\"; done",
      "cvs-container-check"};
  for (const auto& d : c.args.devices) {
    const auto parts = split(d, ':');
    v.push_back(parts.size() > 1 ? parts[1] : parts.empty() ? d : parts[0]);
  }
  return v;
}

std::vector<std::string> check_namespaces(const Container& c, const std::string& outside,
                                          const std::string& inside) {
  std::vector<std::string> out;
  const auto o = split(outside, '\n');
  const auto i = split(inside, '\n');
  auto ns = [](const std::vector<std::string>& lines, std::size_t k) {
    return k < lines.size() ? lines[k] : std::string("(unread)");
  };
  if (c.args.network == "host" && ns(o, 0) != ns(i, 0))
    out.push_back("network host did not reach the container: its network namespace is " + ns(i, 0) +
                  ", the node's " + ns(o, 0));
  if (c.args.ipc == "host" && ns(o, 1) != ns(i, 1))
    out.push_back("ipc host did not reach the container: its IPC namespace is " + ns(i, 1) + ", the node's " +
                  ns(o, 1));
  for (const auto& line : i)
    if (line.rfind("CVS-MISSING ", 0) == 0)
      out.push_back("device " + line.substr(12) + " is not in the container");
  return out;
}

}  // namespace cvs
