// The GPU catalog: what a config's gpu_name means, in one table that the rest reads: the vendor,
// the architecture the probe must find, the FP8 flavor a PRECISION=FP8 sweep runs, the JAX backend
// setup expects, and the vendor tool that reads the GPUs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cvs {

enum class GpuVendor { None, Amd, Nvidia };  // None: the CPU stand-in

struct GpuSpec {
  std::string_view label;  // lower case
  bool prefix;             // the label is a prefix ("mi35" is mi350x and mi355x)
  GpuVendor vendor;
  std::string_view arch;         // gfx942, gfx950, sm_90, sm_100; "" for the CPU
  std::string_view fp8_flavor;   // MaxText's quantization for FP8; "" when there is none
  std::string_view jax_backend;  // what jax.default_backend() says: gpu or cpu
  std::string_view vendor_tool;  // amd-smi (rocm-smi before it), nvidia-smi; "" for the CPU
};

const std::vector<GpuSpec>& gpu_catalog();
// The spec of a gpu_name (case-insensitive); nullptr for a label the catalog does not know.
const GpuSpec* find_gpu(std::string_view gpu_name);

// FP8 flavor by the spec's rule: the catalog's, and nanoo_fp8 for a label it does not know;
// nullopt for the CPU.
std::optional<std::string> fp8_flavor(const std::string& gpu_name);
bool known_gpu_name(const std::string& gpu_name);
// The architecture the probe must find (nullopt: none known, e.g. cpu or an unknown label).
std::optional<std::string> expected_arch(const std::string& gpu_name);
// The JAX backend setup expects (gpu for a label the catalog does not know).
std::string expected_backend(const std::string& gpu_name);

}  // namespace cvs
