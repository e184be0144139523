// What the suite checks about a container, outside any gtest: who owns a container of the
// configured name before launch (a stale one of ours is removed, anyone else's is an error), and
// after launch whether every configured runtime arg reached the container (the engine's inspect
// document, and the namespaces and devices seen from inside).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cvs/config/config.hpp"
#include "cvs/exec/runtime.hpp"

namespace cvs {

// A container of the configured name on one node, from `ENGINE container inspect --format
// '{{json .Config.Labels}}' NAME`.
struct ExistingContainer {
  enum class State { Free, Ours, Foreign, Unknown };
  State state = State::Unknown;
  std::string session;     // kSessionLabel of a container we left
  std::string controller;  // kControllerLabel: controller_id of the suite that started it
  std::string detail;      // Unknown: the engine's message
};
ExistingContainer classify_existing(bool ok, const std::string& out, const std::string& err);

// HOST:PID:START of process `pid` on this host, START its start time (/proc/PID/stat): the pid and
// its start time name one process, never a later one that reuses the pid.
std::string controller_id(const std::string& host, long pid);
// Whether `controller` (controller_id) names a process alive on this host: its container is in
// use by a running session, not stale.
bool controller_alive(const std::string& controller, const std::string& this_host);

// The configured runtime args that the engine's inspect document (one container: the first
// element of `container inspect`'s array, or the object itself) does not show, one message each:
// privileged, mounts (destination, read-only), env, ulimits, shm-size, group-add, labels, and the
// network and IPC modes other than host (host modes are checked on the namespaces instead).
std::vector<std::string> check_inspect(const nlohmann::json& doc, const Container& c, Engine engine,
                                       const ContainerLabels& labels);

// sh program run on the node and inside the container: the network and IPC namespaces, then
// "CVS-MISSING PATH" for each configured device path absent inside.
std::vector<std::string> namespace_probe_argv(const Container& c);
// Compares the probe's output outside (node) and inside (container) for the host modes.
std::vector<std::string> check_namespaces(const Container& c, const std::string& outside,
                                          const std::string& inside);

// "256G", "1g", "64m", "1024" in bytes (docker's binary units); nullopt when unreadable.
std::optional<long long> parse_size_bytes(const std::string& s);

}  // namespace cvs
