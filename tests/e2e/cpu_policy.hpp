// The poll policy the CPU end-to-end and integration tests run the launcher with: polls every
// 0.5 s, 300 s startup + 30 s per step (a tiny CPU model starts in ~10 s and steps in ms).
#pragma once

#include <filesystem>

#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/exec/launch.hpp"

namespace cvs::test {

// A run of the config's first sweep, `steps` long, named `name`, its report copy under copy_root.
inline RunRequest cpu_run_request(const SuiteConfig& cfg, const std::string& name, long long steps,
                                  const std::filesystem::path& copy_root) {
  RunRequest r;
  r.run_name = name;
  r.label = name;
  r.steps = steps;
  r.maxtext_config =
      sweep_maxtext_config(cfg, cfg.runs.front(), name, cfg.paths.log_dir + "/" + name + "/maxtext");
  r.maxtext_config["steps"] = steps;
  r.copy_dir = copy_root / name;
  return r;
}

inline PollPolicy cpu_poll_policy() {
  PollPolicy p;
  p.interval = std::chrono::milliseconds(500);
  p.startup_s = 300;
  p.per_step_s = 30;
  return p;
}

}  // namespace cvs::test
