// The kernel log catalog (telemetry.hpp declares it): the lines of the GPU drivers and the kernel
// that fail a node, what each means, and which a line is.
#include <re2/re2.h>

#include <memory>

#include "cvs/logs/telemetry.hpp"

namespace cvs {

const std::vector<KernelPattern>& kernel_patterns() {
  using K = KernelPattern::Kind;
  using R = KernelPattern::Role;
  // The first that matches names a line: the specific amdgpu forms (shared/data/amd: recorded
  // MI300X incidents) before the general ones.
  static const std::vector<KernelPattern> v = {
      {"nvidia_xid", R"(NVRM: Xid \([^)]*\): \d+)", "an NVIDIA Xid error", K::Gpu, true},
      {"amdgpu_uncorrectable", R"(amdgpu.*uncorrectable hardware error)",
       "an uncorrectable hardware error (RAS) on the GPU", K::Gpu, true, R::Fault},
      {"amdgpu_poison", R"(amdgpu.*poison (is )?consum)", "the GPU consumed poisoned (corrupted) memory",
       K::Gpu, true, R::Fault},
      {"amdgpu_page_fault", R"(amdgpu.*(no-)?retry page fault|amdgpu.*VM_L2_PROTECTION_FAULT_STATUS)",
       "a GPU memory page fault (a process on the GPU touched memory it may not)", K::Gpu, true, R::Fault},
      {"amdgpu_ring_timeout", R"(amdgpu.*ring \S+ timeout)", "an AMD GPU ring (a job on the GPU) timed out",
       K::Gpu, true, R::Fault},
      {"amdgpu_aca", R"(amdgpu.*(Accelerator Check Architecture events logged|aca entry\[|ACA\[\d+/\d+\]))",
       "ACA hardware error records", K::Gpu, false, R::Context},
      {"amdgpu_correctable", R"(amdgpu.*correctable hardware errors? detected)",
       "correctable hardware errors on the GPU", K::Gpu, false, R::Context},
      {"amdgpu_bad_pages", R"(amdgpu.*[Ss]aved bad pages)", "the GPU retired memory pages (saved bad pages)",
       K::Gpu, false, R::Context},
      {"amdgpu_reset", R"(amdgpu.*(GPU reset|GPU recovery|reset begin|MODE[12] reset|ring reset))",
       "an AMD GPU was reset", K::Gpu, true, R::Reset},
      {"amdgpu_ras", R"(amdgpu.*(uncorrectable|RAS).*error)", "an AMD GPU RAS (ECC) error", K::Gpu, true},
      {"machine_check", R"(mce: \[Hardware Error\]|Machine check events logged|Machine Check Exception)",
       "a machine check (a CPU, memory or bus hardware error)", K::MachineCheck, true},
      {"nic_link_down", R"(NIC Link is Down|mlx5_core\S* \S+:.*[Ll]ink down)", "a network link went down",
       K::Nic, true},
      {"rdma_error",
       R"(mlx5_core.*(Fatal|health compromised|cmd_work_handler.*timeout)|ib\w*:.*catastrophic)",
       "an RDMA adapter error", K::Nic, true},
      {"oom_kill", R"(Out of memory: Killed process|Memory cgroup out of memory|oom-kill:)",
       "the kernel's OOM killer killed a process", K::OomKill, false},
      {"segfault", R"(segfault at|traps: .* general protection)", "a process crashed (segfault)", K::Segfault,
       false},
  };
  return v;
}

namespace {

struct CompiledPatterns {
  std::vector<std::unique_ptr<RE2>> re;
  RE2 xid{R"(NVRM: Xid \([^)]*\): (\d+))"};
  CompiledPatterns() {
    RE2::Options o;
    o.set_case_sensitive(false);
    o.set_log_errors(false);
    for (const auto& p : kernel_patterns()) re.push_back(std::make_unique<RE2>(std::string(p.regex), o));
  }
};

const CompiledPatterns& compiled() {
  static const CompiledPatterns c;
  return c;
}

std::string xid_meaning(int code) {
  switch (code) {
    case 13:
      return "graphics engine exception: an application fault or a failing GPU";
    case 31:
      return "GPU memory page fault";
    case 43:
      return "the GPU stopped processing";
    case 45:
      return "preemptive cleanup after another fault";
    case 48:
      return "double-bit ECC error";
    case 61:
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remapping";
    case 64:
      return "ECC page retirement or row remapping failed";
    case 74:
      return "NVLink error";
    case 79:
      return "the GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained ECC error";
    case 95:
      return "uncontained ECC error";
    case 119:
    case 120:
      return "GSP firmware error";
    default:
      return "an NVIDIA Xid error";
  }
}

}  // namespace

const KernelPattern* match_kernel_line(std::string_view text, int* xid) {
  const auto& c = compiled();
  const re2::StringPiece sp(text.data(), text.size());
  for (std::size_t i = 0; i < c.re.size(); ++i)
    if (RE2::PartialMatch(sp, *c.re[i])) {
      if (xid) {
        int code = 0;
        if (RE2::PartialMatch(sp, c.xid, &code)) *xid = code;
      }
      return &kernel_patterns()[i];
    }
  return nullptr;
}

std::string KernelLine::meaning() const {
  if (!pattern) return "";
  if (pattern->name == "nvidia_xid") return "NVIDIA Xid " + std::to_string(xid) + ": " + xid_meaning(xid);
  std::string m(pattern->meaning);
  if (pid > 0) m += " (pid " + std::to_string(pid) + (process.empty() ? "" : ", " + process) + ")";
  return m;
}

std::string KernelLine::device() const {
  if (gpu) return "GPU " + std::to_string(*gpu) + (bus_id.empty() ? "" : " [" + bus_id + "]");
  return bus_id;
}

}  // namespace cvs
