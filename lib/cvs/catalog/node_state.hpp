// NodeState: a node's training as the suite knows it, the one list the launcher, the streams,
// results.json and the report use.
#pragma once

#include <optional>
#include <string_view>

namespace cvs {

// A node's training as the suite knows it. A frame carries Running, Exited, Gone or Stopped (the
// stream program's words: running, exited <rc>, gone, stopped); the launcher adds NotStarted and
// Unreachable.
enum class NodeState { NotStarted, Running, Exited, Gone, Stopped, Unreachable };
// "running", "exited", "gone", "stopped", "unreachable", "not started" (results.json, messages).
std::string_view to_string(NodeState s);
// The inverse of to_string (results.json); nullopt for any other word.
std::optional<NodeState> node_state_from_string(std::string_view word);

}  // namespace cvs
