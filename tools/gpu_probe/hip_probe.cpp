#include "hip_probe.hpp"

#ifdef CVS_HAVE_HIP
#include <dlfcn.h>
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

std::string hip_runtime_name() {
  return "";
}

GpuProbe hip_probe() {
  GpuProbe p;
  p.source = "hip";
  p.error =
      "built without the HIP runtime (configure with -DCVS_WITH_HIP=ON where libamdhip64-dev is installed)";
  return p;
}

#else

// The HIP runtime is opened at run time (dlopen), never linked: the package's Depends carry no HIP
// (255 MB of libllvm, comgr and ICU that a CPU or NVIDIA node does not need), and a node without
// it falls back to the vendor tools. The ABI is the one of the headers this was built with: its
// soname (CVS_HIP_SONAME, from the library found at configure time).
#ifndef CVS_HIP_SONAME
#define CVS_HIP_SONAME "libamdhip64.so.5"
#endif

namespace {

#define CVS_HIP_FUNCTIONS(X) \
  X(hipGetDeviceCount)       \
  X(hipGetDeviceProperties)  \
  X(hipSetDevice)            \
  X(hipMemGetInfo)           \
  X(hipFree)                 \
  X(hipMemcpy)               \
  X(hipDeviceSynchronize)    \
  X(hipModuleLoadData)       \
  X(hipModuleGetFunction)    \
  X(hipModuleLaunchKernel)   \
  X(hipModuleUnload)         \
  X(hiprtcCreateProgram)     \
  X(hiprtcCompileProgram)    \
  X(hiprtcGetProgramLogSize) \
  X(hiprtcGetProgramLog)     \
  X(hiprtcGetCodeSize)       \
  X(hiprtcGetCode)           \
  X(hiprtcDestroyProgram)

// The runtime's functions, resolved once; `error` says why not when it could not be opened.
struct Hip {
#define CVS_HIP_MEMBER(name) decltype(&::name) name = nullptr;
  CVS_HIP_FUNCTIONS(CVS_HIP_MEMBER)
#undef CVS_HIP_MEMBER
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;  // the C function (C++ adds a template overload)
  std::string error;
  bool ok() const {
    return error.empty();
  }
};

const Hip& hip() {
  static const Hip h = [] {
    Hip x;
    void* lib = dlopen(CVS_HIP_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      x.error =
          std::string("the HIP runtime ") + CVS_HIP_SONAME + " is not installed (" + (why ? why : "?") + ")";
      return x;
    }
#define CVS_HIP_LOAD(name)                                        \
  x.name = reinterpret_cast<decltype(x.name)>(dlsym(lib, #name)); \
  if (!x.name && x.error.empty()) x.error = std::string(CVS_HIP_SONAME) + " has no " + #name;
    CVS_HIP_FUNCTIONS(CVS_HIP_LOAD)
    CVS_HIP_LOAD(hipMalloc)
#undef CVS_HIP_LOAD
    return x;
  }();
  return h;
}

}  // namespace

bool hip_available() {
  return hip().ok();
}

std::string hip_runtime_name() {
  return CVS_HIP_SONAME;
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
  const Hip& h = hip();
  hiprtcProgram prog;
  if (h.hiprtcCreateProgram(&prog, kKernel, "cvs_saxpy.cpp", 0, nullptr, nullptr) != HIPRTC_SUCCESS) {
    detail = "hiprtcCreateProgram failed";
    return false;
  }
  const std::string opt = "--offload-arch=" + arch.substr(0, arch.find(':'));
  const char* opts[] = {opt.c_str()};
  if (h.hiprtcCompileProgram(prog, 1, opts) != HIPRTC_SUCCESS) {
    size_t n = 0;
    h.hiprtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    h.hiprtcGetProgramLog(prog, log.data());
    detail = "hiprtc compile failed: " + log.substr(0, 300);
    h.hiprtcDestroyProgram(&prog);
    return false;
  }
  size_t code_size = 0;
  h.hiprtcGetCodeSize(prog, &code_size);
  std::vector<char> code(code_size);
  h.hiprtcGetCode(prog, code.data());
  h.hiprtcDestroyProgram(&prog);
  if (h.hipSetDevice(dev) != hipSuccess) {
    detail = "hipSetDevice failed";
    return false;
  }
  hipModule_t mod;
  hipFunction_t fn;
  if (h.hipModuleLoadData(&mod, code.data()) != hipSuccess ||
      h.hipModuleGetFunction(&fn, mod, "cvs_saxpy") != hipSuccess) {
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
  bool ok = h.hipMalloc(reinterpret_cast<void**>(&dx), n * sizeof(float)) == hipSuccess &&
            h.hipMalloc(reinterpret_cast<void**>(&dy), n * sizeof(float)) == hipSuccess &&
            h.hipMemcpy(dx, x.data(), n * sizeof(float), hipMemcpyHostToDevice) == hipSuccess &&
            h.hipMemcpy(dy, y.data(), n * sizeof(float), hipMemcpyHostToDevice) == hipSuccess;
  if (ok) {
    float a = 2.0f;
    int nn = n;
    void* args[] = {&a, &dx, &dy, &nn};
    ok = h.hipModuleLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) ==
             hipSuccess &&
         h.hipDeviceSynchronize() == hipSuccess &&
         h.hipMemcpy(y.data(), dy, n * sizeof(float), hipMemcpyDeviceToHost) == hipSuccess;
  }
  int wrong = 0;
  if (ok)
    for (int i = 0; i < n; ++i)
      if (std::fabs(y[i] - (2.0f * static_cast<float>(i % 1000) + 1.0f)) > 1e-3f) ++wrong;
  (void)h.hipFree(dx);
  (void)h.hipFree(dy);
  (void)h.hipModuleUnload(mod);
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
  const Hip& h = hip();
  if (!h.ok()) {
    p.error = h.error;
    return p;
  }
  int count = 0;
  if (h.hipGetDeviceCount(&count) != hipSuccess || count == 0) {
    p.error = "HIP runtime reports no device";
    return p;
  }
  bool all_ok = true;
  std::string details;
  for (int i = 0; i < count; ++i) {
    hipDeviceProp_t prop;
    if (h.hipGetDeviceProperties(&prop, i) != hipSuccess) continue;
    GpuDevice d;
    d.index = i;
    d.name = prop.name;
    d.arch = prop.gcnArchName;
    d.total_gb = static_cast<double>(prop.totalGlobalMem) / 1e9;
    size_t free_b = 0, total_b = 0;
    if (h.hipSetDevice(i) == hipSuccess && h.hipMemGetInfo(&free_b, &total_b) == hipSuccess)
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
