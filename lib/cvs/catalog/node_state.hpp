// NodeState: a node's training as the suite knows it, the one list the launcher, the streams,
// results.json and the report use; its words are the table below (base/enum_names.hpp).
#pragma once

#include <optional>
#include <string_view>

#include "cvs/base/enum_names.hpp"

namespace cvs {

// A node's training as the suite knows it. A frame carries Running, Exited, Gone or Stopped (the
// stream program's words: running, exited <rc>, gone, stopped); the launcher adds NotStarted and
// Unreachable.
enum class NodeState { NotStarted, Running, Exited, Gone, Stopped, Unreachable };

inline constexpr EnumWord<NodeState> kNodeStateWords[] = {
    {NodeState::NotStarted, "not started"}, {NodeState::Running, "running"},
    {NodeState::Exited, "exited"},          {NodeState::Gone, "gone"},
    {NodeState::Stopped, "stopped"},        {NodeState::Unreachable, "unreachable"}};

// "running", "exited", "gone", "stopped", "unreachable", "not started" (results.json, messages).
inline std::string_view to_string(NodeState s) {
  return word_of(kNodeStateWords, s);
}
// The inverse of to_string (results.json); nullopt for any other word.
inline std::optional<NodeState> node_state_from_string(std::string_view word) {
  return value_of(kNodeStateWords, word);
}

}  // namespace cvs
