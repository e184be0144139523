// cvs-gpu-probe — prints what GPUs this node has and the compute processes on them, as JSON. With
// the HIP runtime (built with CVS_WITH_HIP) it lists devices, architecture, HBM total and free, and
// runs a short on-device sanity kernel; without it (or with no HIP device) the vendor tool the setup
// stage asks (amd-smi, rocm-smi or nvidia-smi) names them. The compute processes always come from
// the vendor tool, and each is said on stderr too. "no GPU" is a typed result (exit 3), not a crash.
// Exit: 0 devices found, 1 the sanity kernel failed, 2 bad usage, 3 no GPU.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cvs/base/exit_codes.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/logs/gpu_processes.hpp"
#include "cvs/probe/gpu_probe.hpp"
#include "hip_probe.hpp"

namespace {

// The vendor tools as the setup stage asks them inside the runtime (cvs/probe/gpu_probe.hpp: one
// program, one reader): the GPUs and the compute processes on them.
cvs::GpuProbe probe_with_tools() {
  auto r = cvs::run_one({cvs::gpu_probe_command(), std::chrono::seconds(90), "vendor tools", 16u << 20});
  auto p = cvs::parse_probe_output(r.out);
  if (p.no_gpu() && !r.ok()) p.error += (p.error.empty() ? "" : "; ") + r.describe();
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cvs-gpu-probe: this node's GPUs and the compute processes on them, as JSON (exit 0 GPUs, 1 the sanity "
      "kernel failed, 2 bad usage, 3 no GPU)",
      "cvs-gpu-probe"};
  bool tools_only = false;
  app.add_flag("--tools-only", tools_only, "skip the HIP runtime: amd-smi, rocm-smi, nvidia-smi only");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  cvs::GpuProbe p;
  if (!tools_only) p = cvs::hip_probe();
  const auto tools = probe_with_tools();
  if (p.no_gpu()) {
    const auto hip_error = p.error;
    p = tools;
    if (p.no_gpu() && !hip_error.empty()) p.error = hip_error + "; " + p.error;
  } else {  // HIP's devices and sanity kernel; the processes only the vendor tool lists
    p.processes = tools.processes;
    p.processes_listed = tools.processes_listed;
    p.processes_error = tools.processes_error;
  }
  // Nothing of this probe runs on a GPU: every compute process listed is another job's.
  for (const auto& x : p.processes) std::cerr << "cvs-gpu-probe: " << cvs::describe(x) << " is on it\n";
  auto j = cvs::to_json(p);
  j["hip_runtime"] = cvs::hip_available();
  j["hip_runtime_library"] = cvs::hip_runtime_name();
  std::cout << j.dump(2) << "\n";
  if (p.no_gpu()) return cvs::kExitInfra;
  return (p.sanity_kernel_ok && !*p.sanity_kernel_ok) ? cvs::kExitFail : cvs::kExitOk;
}
