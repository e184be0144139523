// gpu_probe — prints what GPUs this node has, as JSON. With the HIP runtime (built with
// CVS_WITH_HIP) it lists devices, architecture, HBM total and free, and runs a short on-device
// sanity kernel; without it (or with no HIP device) it falls back to rocm-smi --json, amd-smi
// --json and nvidia-smi --query-gpu. "no GPU" is a typed result (exit 3), not a crash.
// Exit: 0 devices found, 3 no GPU, 1 the probe itself failed, 2 bad usage.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cvs/exec/process.hpp"
#include "cvs/probe/gpu_probe.hpp"
#include "hip_probe.hpp"

namespace {

std::string run(const std::vector<std::string>& argv) {
  auto r = cvs::run_one({argv, std::chrono::seconds(60), argv[0], 16u << 20});
  return r.ok() ? r.out : std::string();
}

cvs::GpuProbe probe_with_tools() {
  if (auto out = run({"amd-smi", "static", "--asic", "--vram", "--json"}); !out.empty()) {
    auto p = cvs::parse_amd_smi_json(out, run({"amd-smi", "metric", "--mem-usage", "--json"}));
    if (!p.no_gpu()) return p;
  }
  if (auto out = run({"rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"}); !out.empty()) {
    auto p = cvs::parse_rocm_smi_json(out);
    if (!p.no_gpu()) return p;
  }
  if (auto out = run({"nvidia-smi", "--query-gpu=index,name,memory.total,memory.free,compute_cap",
                      "--format=csv,noheader,nounits"});
      !out.empty()) {
    auto p = cvs::parse_nvidia_smi_csv(out);
    if (!p.no_gpu()) return p;
  }
  cvs::GpuProbe none;
  none.source = "none";
  none.error = "no GPU: no HIP device, and none of amd-smi, rocm-smi, nvidia-smi reported one";
  return none;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpu_probe: this node's GPUs as JSON (exit 0 GPUs, 3 no GPU, 1 the probe failed, 2 bad usage)",
               "gpu_probe"};
  bool tools_only = false;
  app.add_flag("--tools-only", tools_only, "skip the HIP runtime: amd-smi, rocm-smi, nvidia-smi only");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  cvs::GpuProbe p;
  if (!tools_only) p = cvs::hip_probe();
  if (p.no_gpu()) {
    auto hip_error = p.error;
    p = probe_with_tools();
    if (p.no_gpu() && !hip_error.empty()) p.error = hip_error + "; " + p.error;
  }
  auto j = cvs::to_json(p);
  j["hip_runtime"] = cvs::hip_available();
  std::cout << j.dump(2) << "\n";
  if (p.no_gpu()) return 3;
  return (p.sanity_kernel_ok && !*p.sanity_kernel_ok) ? 1 : 0;
}
