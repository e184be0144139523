#include "cvs/catalog/node_state.hpp"

namespace cvs {

std::string_view to_string(NodeState s) {
  switch (s) {
    case NodeState::NotStarted:
      return "not started";
    case NodeState::Running:
      return "running";
    case NodeState::Exited:
      return "exited";
    case NodeState::Gone:
      return "gone";
    case NodeState::Stopped:
      return "stopped";
    case NodeState::Unreachable:
      return "unreachable";
  }
  return "unknown";
}

std::optional<NodeState> node_state_from_string(std::string_view word) {
  for (NodeState s : {NodeState::NotStarted, NodeState::Running, NodeState::Exited, NodeState::Gone,
                      NodeState::Stopped, NodeState::Unreachable})
    if (to_string(s) == word) return s;
  return std::nullopt;
}

}  // namespace cvs
