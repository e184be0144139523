// GPU probing: the vendor tools' outputs (transcribed from their documented JSON/CSV formats),
// the checks test_setup makes, and gpu_probe's typed "no GPU" result on this GPU-less machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cvs/exec/process.hpp"
#include "cvs/probe/gpu_probe.hpp"
#include "test_helpers.hpp"

using cvs::check_probe;

namespace {
std::string file(const std::string& n) {
  return cvs::test::read_file(cvs::test::data("gpu_probe/" + n));
}
}  // namespace

TEST(GpuProbe, RocmSmiJson) {
  auto p = cvs::parse_rocm_smi_json(file("rocm_smi_mi300x_8.json"));
  ASSERT_EQ(p.devices.size(), 8u);
  EXPECT_EQ(p.devices[0].arch, "gfx942");
  EXPECT_EQ(p.devices[0].name, "AMD Instinct MI300X OAM");
  EXPECT_NEAR(*p.devices[0].total_gb, 206.14, 0.01);
  EXPECT_NEAR(*p.devices[0].free_gb, 205.85, 0.01);
  EXPECT_TRUE(check_probe(p, "mi3xx", 8).empty());
  EXPECT_TRUE(check_probe(p, "mi300x", 8).empty());
}

TEST(GpuProbe, AmdSmiJson) {
  auto p =
      cvs::parse_amd_smi_json(file("amd_smi_static_mi355x_8.json"), file("amd_smi_metric_mi355x_8.json"));
  ASSERT_EQ(p.devices.size(), 8u);
  EXPECT_EQ(p.devices[7].index, 7);
  EXPECT_EQ(p.devices[7].arch, "gfx950");
  EXPECT_NEAR(*p.devices[0].total_gb, 294.896, 1e-6);
  EXPECT_NEAR(*p.devices[0].free_gb, 294.613, 1e-6);
  EXPECT_TRUE(check_probe(p, "mi35x", 8).empty());
  // Older amd-smi printed sizes as "N MB" strings.
  auto old = cvs::parse_amd_smi_json(
      R"([{"gpu": 0, "asic": {"market_name": "MI300X", "target_graphics_version": "gfx942"}, "vram": {"size": "196592 MB"}}])",
      "");
  ASSERT_EQ(old.devices.size(), 1u);
  EXPECT_NEAR(*old.devices[0].total_gb, 196.592, 1e-6);
}

TEST(GpuProbe, NvidiaSmiCsv) {
  auto p = cvs::parse_nvidia_smi_csv(file("nvidia_smi_h100_8.csv"));
  ASSERT_EQ(p.devices.size(), 8u);
  EXPECT_EQ(p.devices[0].arch, "sm_90");
  EXPECT_EQ(p.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(check_probe(p, "h100", 8).empty());
  EXPECT_FALSE(check_probe(p, "gb200", 8).empty());
}

// Recorded on a real NVIDIA H200 (driver 580.159.04) by tests/device/h200_check.sh: the probe's
// own query, and what gpu_probe (this repository's binary, HIP build, no AMD device there) printed
// from it on that machine.
TEST(GpuProbe, ARealH200ReadsAsOneSm90GpuAndTheBinarysOutputThereIsThisParse) {
  const auto p = cvs::parse_nvidia_smi_csv(file("nvidia_smi_h200_1.csv"));
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(p.devices[0].arch, "sm_90");
  EXPECT_NEAR(*p.devices[0].total_gb, 143771 * 1.048576 / 1000, 1e-9) << "MiB, in decimal GB";
  EXPECT_TRUE(check_probe(p, "h200", 1).empty());
  EXPECT_TRUE(check_probe(p, "h100", 1).empty()) << "the same sm_90";
  EXPECT_FALSE(check_probe(p, "gb200", 1).empty()) << "sm_100";
  EXPECT_FALSE(check_probe(p, "h200", 8).empty());
  auto there = nlohmann::json::parse(file("gpu_probe_h200.json"));
  EXPECT_TRUE(there.at("hip_runtime").get<bool>());
  there.erase("hip_runtime");
  EXPECT_EQ(there, nlohmann::json::parse(cvs::to_json(p).dump()));
}

TEST(GpuProbe, CountArchAndBusyMemoryAreProblems) {
  auto p = cvs::parse_rocm_smi_json(file("rocm_smi_mi300x_8.json"));
  auto count = check_probe(p, "mi3xx", 4);
  ASSERT_EQ(count.size(), 1u);
  EXPECT_NE(count[0].find("8 GPU(s) visible"), std::string::npos) << count[0];
  auto arch = check_probe(p, "mi35x", 8);
  ASSERT_EQ(arch.size(), 1u);
  EXPECT_NE(arch[0].find("is gfx942 but gpu_name 'mi35x' runs on gfx950"), std::string::npos) << arch[0];
  auto busy = check_probe(cvs::parse_rocm_smi_json(file("rocm_smi_mi300x_8_busy.json")), "mi3xx", 8);
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_NE(busy[0].find("GPU 3 has 55.8 of 206.1 GB free"), std::string::npos) << busy[0];
  EXPECT_NE(busy[0].find("telemetry.min_free_memory_fraction"), std::string::npos) << busy[0];
  // The fraction is the config's: 0.25 lets 55.8 of 206.1 GB (27 %) pass; 0 turns it off.
  const auto busy_probe = cvs::parse_rocm_smi_json(file("rocm_smi_mi300x_8_busy.json"));
  EXPECT_TRUE(check_probe(busy_probe, "mi3xx", 8, false, 0.25).empty());
  EXPECT_TRUE(check_probe(busy_probe, "mi3xx", 8, false, 0.0).empty());
  EXPECT_EQ(check_probe(busy_probe, "mi3xx", 8, false, 0.3).size(), 1u);
}

TEST(GpuProbe, NoGpuIsATypedResult) {
  cvs::GpuProbe none;
  none.source = "none";
  auto j = cvs::to_json(none);
  EXPECT_EQ(j["result"], "no GPU");
  EXPECT_EQ(j["gpu_count"], 0);
  auto bad = check_probe(none, "mi3xx", 8);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("no GPU found"), std::string::npos);
  EXPECT_EQ(cvs::probe_from_json(cvs::to_json(cvs::parse_rocm_smi_json(file("rocm_smi_mi300x_8.json"))))
                .devices.size(),
            8u);
}

TEST(GpuProbe, TheBinaryReportsNoGpuOnThisMachine) {
  auto p = cvs::test::run_command(std::string(CVS_GPU_PROBE));
  EXPECT_EQ(p.exit_code, 3) << p.out;
  auto j = nlohmann::json::parse(p.out.substr(p.out.find('{')));
  EXPECT_EQ(j["result"], "no GPU");
  EXPECT_EQ(j["gpu_count"], 0);
  EXPECT_TRUE(j.contains("hip_runtime"));
  EXPECT_FALSE(j["error"].get<std::string>().empty());
}

TEST(GpuProbe, TheInRuntimeProgramPicksTheFirstToolAndItsOutputParses) {
  auto p = cvs::parse_probe_output("CVS-ROCMSMI\n" + file("rocm_smi_mi300x_8.json"));
  EXPECT_EQ(p.source, "rocm-smi");
  EXPECT_EQ(p.devices.size(), 8u);
  auto a = cvs::parse_probe_output("CVS-AMDSMI-STATIC\n" + file("amd_smi_static_mi355x_8.json") +
                                   "\nCVS-AMDSMI-METRIC\n" + file("amd_smi_metric_mi355x_8.json"));
  EXPECT_EQ(a.source, "amd-smi");
  ASSERT_EQ(a.devices.size(), 8u);
  EXPECT_TRUE(a.devices[0].free_gb.has_value());
  auto n = cvs::parse_probe_output("CVS-NVSMI\n" + file("nvidia_smi_h100_8.csv"));
  EXPECT_EQ(n.devices.size(), 8u);
  // On this machine none of the tools exists: the real program says so.
  auto here = cvs::run_one({cvs::gpu_probe_command(), std::chrono::seconds(30), "here"});
  auto none = cvs::parse_probe_output(here.out);
  EXPECT_TRUE(none.no_gpu());
  EXPECT_EQ(none.source, "none");
}

// The GPU catalog is the one table: the probe's architecture, the FP8 flavor, the JAX backend and
// the vendor tool of a label all come from it; labels are case-insensitive, prefixes cover the
// variants (mi350x, mi355x; h100-sxm).
TEST(GpuCatalog, OneTableForArchFlavorBackendAndTool) {
  for (const auto& g : cvs::gpu_catalog()) {
    if (g.vendor == cvs::GpuVendor::Amd) {
      EXPECT_EQ(g.arch.substr(0, 3), "gfx") << g.label;
      EXPECT_EQ(g.vendor_tool, "amd-smi") << g.label;
    }
    if (g.vendor == cvs::GpuVendor::Nvidia) {
      EXPECT_EQ(g.arch.substr(0, 3), "sm_") << g.label;
      EXPECT_EQ(g.vendor_tool, "nvidia-smi") << g.label;
      EXPECT_EQ(g.fp8_flavor, "fp8") << g.label;
    }
  }
  EXPECT_EQ(cvs::expected_arch("MI300X"), "gfx942");
  EXPECT_EQ(cvs::expected_arch("mi355x"), "gfx950");
  EXPECT_EQ(cvs::expected_arch("h100-sxm"), "sm_90");
  EXPECT_EQ(cvs::expected_arch("cpu"), std::nullopt);
  EXPECT_EQ(cvs::expected_backend("cpu"), "cpu");
  EXPECT_EQ(cvs::expected_backend("mi325x"), "gpu");
  EXPECT_EQ(cvs::expected_backend("some-new-gpu"), "gpu");
  EXPECT_EQ(cvs::fp8_flavor("mi350x"), "fp8");
  EXPECT_EQ(cvs::fp8_flavor("mi325x"), "nanoo_fp8");
  EXPECT_EQ(cvs::fp8_flavor("some-new-gpu"), "nanoo_fp8");  // the spec's rule for other labels
  EXPECT_FALSE(cvs::known_gpu_name("some-new-gpu"));
  EXPECT_EQ(cvs::find_gpu("GB200")->vendor, cvs::GpuVendor::Nvidia);
}

// cvs-gpu-probe lists the compute processes as the setup stage does, worded. A stand-in
// nvidia-smi (a shell script on PATH: no GPU exists here, the double is at that boundary) answers
// the probe's two queries: one H200, and a process of another PID namespace on it.
TEST(GpuProbe, TheBinaryListsTheComputeProcessesWorded) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs-probe-bin-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "nvidia-smi");
    f << "#!/bin/sh\ncase \"$*\" in\n"
         "  *--query-gpu=*) echo '0, NVIDIA H200, 143771, 142000, 9.0, GPU-aaa' ;;\n"
         "  *--query-compute-apps=*) printf 'gpu_uuid, pid, process_name, used_gpu_memory [MiB]\\n"
         "GPU-aaa, 9191, [Not Found], 1002\\n' ;;\nesac\n";
  }
  std::filesystem::permissions(dir / "nvidia-smi", std::filesystem::perms::owner_all);
  auto p = cvs::test::run_command("PATH=" + dir.string() + ":$PATH " + CVS_GPU_PROBE + " --tools-only");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(
      p.out.find("cvs-gpu-probe: GPU 0: pid 9191 (name not visible here: a process of another container or "
                 "PID namespace, 1002 MiB) is on it"),
      std::string::npos)
      << p.out;
  const auto j = nlohmann::json::parse(p.out.substr(p.out.find('{')));
  ASSERT_EQ(j["processes"].size(), 1u) << j.dump();
  EXPECT_EQ(j["processes"][0]["pid"], 9191);
  const auto help = cvs::test::run_command(std::string(CVS_GPU_PROBE) + " --help");
  EXPECT_EQ(help.out.rfind("cvs-gpu-probe: ", 0), 0u) << "its installed name, never gpu_probe: " << help.out;
}
