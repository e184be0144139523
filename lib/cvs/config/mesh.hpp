// The device mesh MaxText builds for a sweep, checked before anything starts: its ici_* and dcn_*
// parallelism keys (one -1 per kind fills the rest, as MaxText's fill_unspecified_mesh_axes does)
// must multiply out to the devices of a slice and to the slices. On GPUs a node is a slice
// (gpus_per_node devices, the nodes across); on JAX's CPU backend MaxText builds one slice of
// every device unless num_slices says otherwise.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "cvs/config/config.hpp"
#include "cvs/config/config_error.hpp"

namespace cvs {

struct MeshPlan {
  long long slices = 1;
  long long devices_per_slice = 1;
  std::vector<std::pair<std::string, long long>> ici, dcn;  // the axes other than 1, filled
  // "ici fsdp 4 x tensor 2 over 8 devices a slice; dcn data 2 over 2 slices"
  std::string describe() const;
};

// The mesh of `sweep` on `nodes` nodes, or the issues that make it impossible (each naming the
// keys, their product, the devices and the fix, at the key's JSON pointer).
struct MeshCheck {
  MeshPlan plan;
  std::vector<ConfigIssue> issues;
};
MeshCheck check_mesh(const SuiteConfig& cfg, const std::string& sweep, std::size_t nodes);

// Every enabled sweep's issues at once: a ConfigError (exit 2) when there is any.
void require_meshes_fit(const SuiteConfig& cfg, std::size_t nodes);

}  // namespace cvs
