#include "cvs/catalog/node_state.hpp"

#include "cvs/base/enum_names.hpp"

namespace cvs {
namespace {

constexpr EnumWord<NodeState> kStateWords[] = {
    {NodeState::NotStarted, "not started"}, {NodeState::Running, "running"},
    {NodeState::Exited, "exited"},          {NodeState::Gone, "gone"},
    {NodeState::Stopped, "stopped"},        {NodeState::Unreachable, "unreachable"}};

}  // namespace

std::string_view to_string(NodeState s) {
  return word_of(kStateWords, s);
}

std::optional<NodeState> node_state_from_string(std::string_view word) {
  return value_of(kStateWords, word);
}

}  // namespace cvs
