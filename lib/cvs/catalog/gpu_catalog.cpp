#include "cvs/catalog/gpu_catalog.hpp"

#include <cctype>

namespace cvs {

const std::vector<GpuSpec>& gpu_catalog() {
  using V = GpuVendor;
  static const std::vector<GpuSpec> v = {
      {"cpu", false, V::None, "", "", "cpu", ""},
      {"mi300x", false, V::Amd, "gfx942", "nanoo_fp8", "gpu", "amd-smi"},
      {"mi325x", false, V::Amd, "gfx942", "nanoo_fp8", "gpu", "amd-smi"},
      {"mi300a", false, V::Amd, "gfx942", "nanoo_fp8", "gpu", "amd-smi"},
      {"mi3xx", false, V::Amd, "gfx942", "nanoo_fp8", "gpu", "amd-smi"},
      {"mi35", true, V::Amd, "gfx950", "fp8", "gpu", "amd-smi"},
      {"h100", true, V::Nvidia, "sm_90", "fp8", "gpu", "nvidia-smi"},
      {"h200", true, V::Nvidia, "sm_90", "fp8", "gpu", "nvidia-smi"},
      {"gb200", true, V::Nvidia, "sm_100", "fp8", "gpu", "nvidia-smi"},
      {"b200", true, V::Nvidia, "sm_100", "fp8", "gpu", "nvidia-smi"},
  };
  return v;
}

const GpuSpec* find_gpu(std::string_view gpu_name) {
  std::string l(gpu_name);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& g : gpu_catalog())
    if (g.prefix ? l.rfind(g.label, 0) == 0 : l == g.label) return &g;
  return nullptr;
}

std::optional<std::string> fp8_flavor(const std::string& gpu_name) {
  const auto* g = find_gpu(gpu_name);
  if (!g) return "nanoo_fp8";  // the spec: mi35* -> fp8, every other label -> nanoo_fp8
  if (g->fp8_flavor.empty()) return std::nullopt;
  return std::string(g->fp8_flavor);
}

bool known_gpu_name(const std::string& gpu_name) {
  return find_gpu(gpu_name) != nullptr;
}

std::optional<std::string> expected_arch(const std::string& gpu_name) {
  const auto* g = find_gpu(gpu_name);
  if (!g || g->arch.empty()) return std::nullopt;
  return std::string(g->arch);
}

std::string expected_backend(const std::string& gpu_name) {
  const auto* g = find_gpu(gpu_name);
  return g ? std::string(g->jax_backend) : "gpu";
}

}  // namespace cvs
