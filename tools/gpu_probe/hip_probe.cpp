#include "hip_probe.hpp"

#ifdef CVS_HAVE_HIP
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <cmath>
#include <string>
#include <vector>
#endif

namespace cvs {

#ifndef CVS_HAVE_HIP

bool hip_available() {
  return false;
}

GpuProbe hip_probe() {
  GpuProbe p;
  p.source = "hip";
  p.error =
      "built without the HIP runtime (configure with -DCVS_WITH_HIP=ON where libamdhip64-dev is installed)";
  return p;
}

#else

bool hip_available() {
  return true;
}

namespace {

constexpr const char* kKernel = R"(
extern "C" __global__ void cvs_saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";

// Compiles cvs_saxpy for the device's architecture with hiprtc, runs it on 1M floats and checks
// every element on the host.
bool sanity_kernel(int dev, const std::string& arch, std::string& detail) {
  hiprtcProgram prog;
  if (hiprtcCreateProgram(&prog, kKernel, "cvs_saxpy.cpp", 0, nullptr, nullptr) != HIPRTC_SUCCESS) {
    detail = "hiprtcCreateProgram failed";
    return false;
  }
  const std::string opt = "--offload-arch=" + arch.substr(0, arch.find(':'));
  const char* opts[] = {opt.c_str()};
  if (hiprtcCompileProgram(prog, 1, opts) != HIPRTC_SUCCESS) {
    size_t n = 0;
    hiprtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    hiprtcGetProgramLog(prog, log.data());
    detail = "hiprtc compile failed: " + log.substr(0, 300);
    hiprtcDestroyProgram(&prog);
    return false;
  }
  size_t code_size = 0;
  hiprtcGetCodeSize(prog, &code_size);
  std::vector<char> code(code_size);
  hiprtcGetCode(prog, code.data());
  hiprtcDestroyProgram(&prog);
  if (hipSetDevice(dev) != hipSuccess) {
    detail = "hipSetDevice failed";
    return false;
  }
  hipModule_t mod;
  hipFunction_t fn;
  if (hipModuleLoadData(&mod, code.data()) != hipSuccess ||
      hipModuleGetFunction(&fn, mod, "cvs_saxpy") != hipSuccess) {
    detail = "loading the kernel failed";
    return false;
  }
  const int n = 1 << 20;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000);
    y[i] = 1.0f;
  }
  float *dx = nullptr, *dy = nullptr;
  bool ok = hipMalloc(&dx, n * sizeof(float)) == hipSuccess &&
            hipMalloc(&dy, n * sizeof(float)) == hipSuccess &&
            hipMemcpy(dx, x.data(), n * sizeof(float), hipMemcpyHostToDevice) == hipSuccess &&
            hipMemcpy(dy, y.data(), n * sizeof(float), hipMemcpyHostToDevice) == hipSuccess;
  if (ok) {
    float a = 2.0f;
    int nn = n;
    void* args[] = {&a, &dx, &dy, &nn};
    ok = hipModuleLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) ==
             hipSuccess &&
         hipDeviceSynchronize() == hipSuccess &&
         hipMemcpy(y.data(), dy, n * sizeof(float), hipMemcpyDeviceToHost) == hipSuccess;
  }
  int wrong = 0;
  if (ok)
    for (int i = 0; i < n; ++i)
      if (std::fabs(y[i] - (2.0f * static_cast<float>(i % 1000) + 1.0f)) > 1e-3f) ++wrong;
  (void)hipFree(dx);
  (void)hipFree(dy);
  (void)hipModuleUnload(mod);
  if (!ok) {
    detail = "kernel launch or copy failed";
    return false;
  }
  detail =
      wrong == 0 ? "saxpy on 1048576 floats correct" : std::to_string(wrong) + " of 1048576 results wrong";
  return wrong == 0;
}

}  // namespace

GpuProbe hip_probe() {
  GpuProbe p;
  p.source = "hip";
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess || count == 0) {
    p.error = "HIP runtime reports no device";
    return p;
  }
  bool all_ok = true;
  std::string details;
  for (int i = 0; i < count; ++i) {
    hipDeviceProp_t prop;
    if (hipGetDeviceProperties(&prop, i) != hipSuccess) continue;
    GpuDevice d;
    d.index = i;
    d.name = prop.name;
    d.arch = prop.gcnArchName;
    d.total_gb = static_cast<double>(prop.totalGlobalMem) / 1e9;
    size_t free_b = 0, total_b = 0;
    if (hipSetDevice(i) == hipSuccess && hipMemGetInfo(&free_b, &total_b) == hipSuccess)
      d.free_gb = static_cast<double>(free_b) / 1e9;
    std::string detail;
    const bool ok = sanity_kernel(i, d.arch, detail);
    all_ok &= ok;
    details += (details.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(i) + ": " + detail;
    p.devices.push_back(d);
  }
  p.sanity_kernel_ok = all_ok;
  p.sanity_detail = details;
  return p;
}

#endif

}  // namespace cvs
