// The poll policy the CPU end-to-end and integration tests run the launcher with: polls every
// 0.5 s, 300 s startup + 30 s per step (a tiny CPU model starts in ~10 s and steps in ms).
#pragma once

#include "cvs/launch.hpp"

namespace cvs::test {

inline PollPolicy cpu_poll_policy() {
  PollPolicy p;
  p.interval = std::chrono::milliseconds(500);
  p.startup_s = 300;
  p.per_step_s = 30;
  return p;
}

}  // namespace cvs::test
