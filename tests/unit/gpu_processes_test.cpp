// Processes on a GPU that are not this session's: the setup stage's check (through a stand-in
// nvidia-smi at the tool's process boundary: no GPU here) and the telemetry's record and words,
// on the answer a real H200 gave with a neighbour on it (tests/data/h200).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cvs/logs/gpu_processes.hpp"
#include "cvs/logs/telemetry.hpp"
#include "cvs/probe/gpu_probe.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"
#include "cvs/results/telemetry_record.hpp"
#include "test_helpers.hpp"

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A folder with an nvidia-smi that answers the probe's --query-gpu with the real H200's recorded
// row and --query-compute-apps with the recorded neighbour line.
std::filesystem::path stand_in_nvidia_smi() {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "stand_in_nvsmi";
  std::filesystem::create_directories(dir);
  const auto tool = dir / "nvidia-smi";
  std::ofstream(tool) << "#!/bin/sh\ncase \"$1\" in\n  --query-compute-apps=*) cat "
                      << shell_quote(cvs::test::data("h200/neighbour_query_compute_apps.csv").string())
                      << " ;;\n  *) cat "
                      << shell_quote(cvs::test::data("gpu_probe/nvidia_smi_h200_1.csv").string())
                      << " ;;\nesac\n";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all);
  return dir;
}

}  // namespace

TEST(GpuProcesses, TheSetupCheckFailsANodeWhoseGpuAnotherProcessHolds) {
  const auto dir = stand_in_nvidia_smi();
  const auto argv = cvs::gpu_probe_command();
  ASSERT_EQ(argv.size(), 3u);
  const auto out = cvs::test::run_command("PATH=" + shell_quote(dir.string()) + ":/usr/bin:/bin sh -c " +
                                          shell_quote(argv[2]));
  ASSERT_EQ(out.exit_code, 0) << out.out;
  const auto probe = cvs::parse_probe_output(out.out);
  ASSERT_EQ(probe.devices.size(), 1u) << out.out;
  ASSERT_TRUE(probe.processes_listed) << probe.processes_error;
  ASSERT_EQ(probe.processes.size(), 1u);
  const auto bad = cvs::check_probe(probe, "h200", 1);
  ASSERT_EQ(bad.size(), 1u) << "1002 MiB of 141 GB: the free-memory check alone passed it";
  EXPECT_NE(bad[0].find("GPU 0: pid 484 (python3, 1002 MiB) is on it"), std::string::npos) << bad[0];
  EXPECT_NE(bad[0].find("another job is on this GPU: stop it or drain the node"), std::string::npos)
      << bad[0];
  EXPECT_TRUE(cvs::check_probe(probe, "h200", 1, /*allow_shared_gpu=*/true).empty());
  // The probe's record keeps the list (results.json provenance) and reads back.
  const auto back = cvs::probe_from_json(cvs::to_json(probe));
  ASSERT_EQ(back.processes.size(), 1u);
  EXPECT_EQ(back.processes[0].pid, 484);
  EXPECT_EQ(cvs::check_probe(back, "h200", 1), bad);
}

namespace {

// A folder with an AMD tool named `tool` answering as `script` says (a sh case on "$1").
std::filesystem::path stand_in(const std::string& tool, const std::string& script) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("stand_in_" + tool);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / tool) << "#!/bin/sh\n" << script;
  std::filesystem::permissions(dir / tool, std::filesystem::perms::owner_all);
  return dir;
}

cvs::GpuProbe probe_with(const std::filesystem::path& dir) {
  const auto out = cvs::test::run_command("PATH=" + shell_quote(dir.string()) + ":/usr/bin:/bin sh -c " +
                                          shell_quote(cvs::gpu_probe_command()[2]));
  EXPECT_EQ(out.exit_code, 0) << out.out;
  return cvs::parse_probe_output(out.out);
}

}  // namespace

// The AMD tools' forms through the same process boundary: amd-smi (the recorded MI355X answers,
// a process on GPU 3) and rocm-smi (the recorded MI300X answer, a stale job with no GPU index).
TEST(GpuProcesses, TheSetupCheckReadsTheAmdToolsProcessListsToo) {
  const auto data = cvs::test::data("gpu_probe");
  const auto amd = stand_in(
      "amd-smi",
      "case \"$1\" in\n  static) cat " + shell_quote((data / "amd_smi_static_mi355x_8.json").string()) +
          " ;;\n  metric) cat " + shell_quote((data / "amd_smi_metric_mi355x_8.json").string()) +
          " ;;\n  process) echo '[{\"gpu\": 3, \"process_list\": [{\"process_info\": {\"name\": \"python3\", "
          "\"pid\": 4242, \"memory_usage\": {\"vram_mem\": {\"value\": 2048, \"unit\": \"MB\"}}}}]}]' "
          ";;\nesac\n");
  auto p = probe_with(amd);
  ASSERT_EQ(p.devices.size(), 8u) << p.error;
  ASSERT_TRUE(p.processes_listed) << p.processes_error;
  auto bad = cvs::check_probe(p, "mi35x", 8);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("GPU 3: pid 4242 (python3, 2048 MiB) is on it"), std::string::npos) << bad[0];
  const auto rocm =
      stand_in("rocm-smi",
               "case \"$1\" in\n  --showpids) echo '{\"system\": {\"PID77\": \"stale_job, 1, 1073741824, 0, "
               "unknown\"}}' ;;\n  *) cat " +
                   shell_quote((data / "rocm_smi_mi300x_8.json").string()) + " ;;\nesac\n");
  p = probe_with(rocm);
  ASSERT_EQ(p.devices.size(), 8u) << p.error;
  bad = cvs::check_probe(p, "mi3xx", 8);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("a GPU: pid 77 (stale_job, 1024 MiB) is on it"), std::string::npos) << bad[0];
}

TEST(GpuProcesses, NvidiaSmiListsReadWithOrWithoutHeaderAndUnits) {
  auto l = cvs::parse_nvidia_compute_apps(
      cvs::test::read_file(cvs::test::data("h200/neighbour_query_compute_apps.csv")));
  ASSERT_EQ(l.processes.size(), 1u);
  EXPECT_EQ(l.processes[0].pid, 484);
  EXPECT_EQ(l.processes[0].name, "python3");
  EXPECT_DOUBLE_EQ(*l.processes[0].memory_mib, 1002);
  EXPECT_EQ(l.processes[0].gpu, -1) << "no UUID column, no GPU list: which GPU is not said";
  // The sampler's query: a header, no units; the GPU by its UUID.
  l = cvs::parse_nvidia_compute_apps(
      "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\nGPU-aaa, 4242, python3, 70000\nGPU-bbb, 484, "
      "python3, 1002\n",
      {{0, "GPU-aaa"}, {3, "GPU-bbb"}});
  ASSERT_EQ(l.processes.size(), 2u);
  EXPECT_EQ(l.processes[1].gpu, 3);
  EXPECT_EQ(cvs::describe(l.processes[1]), "GPU 3: pid 484 (python3, 1002 MiB)");
  // An old driver that does not know the field: an error, never a silent empty list.
  l = cvs::parse_nvidia_compute_apps("Field \"gpu_uuid\" is not a valid field to query.\n");
  EXPECT_TRUE(l.processes.empty());
  EXPECT_FALSE(l.error.empty());
  EXPECT_TRUE(cvs::parse_nvidia_compute_apps("gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n")
                  .processes.empty());
}

TEST(GpuProcesses, AmdSmiAndRocmSmiFormsReadAsWell) {
  const auto amd = cvs::parse_amd_smi_process(R"([
    {"gpu": 0, "process_list": [{"process_info": "No running processes detected"}]},
    {"gpu": 1, "process_list": [{"process_info": {"name": "python3", "pid": 4242,
      "memory_usage": {"gtt_mem": {"value": 2, "unit": "MB"}, "cpu_mem": {"value": 1, "unit": "MB"},
                       "vram_mem": {"value": 2048, "unit": "MB"}},
      "mem_usage": {"value": 2050, "unit": "MB"}, "usage": {"gfx": {"value": 0, "unit": "ns"}}}}]}])");
  ASSERT_TRUE(amd.error.empty()) << amd.error;
  ASSERT_EQ(amd.processes.size(), 1u);
  EXPECT_EQ(cvs::describe(amd.processes[0]), "GPU 1: pid 4242 (python3, 2048 MiB)");
  const auto rocm = cvs::parse_rocm_smi_pids(
      R"({"system": {"PID4242": "python3, 1, 2147483648, 0, unknown", "PID77": "stale_job, 2, 0, 0, unknown"}})");
  ASSERT_EQ(rocm.processes.size(), 2u);
  EXPECT_EQ(cvs::describe(rocm.processes[0]), "a GPU: pid 4242 (python3, 2048 MiB)");
  EXPECT_FALSE(cvs::parse_amd_smi_process("amd-smi: command not found").error.empty());
  EXPECT_FALSE(cvs::parse_rocm_smi_pids("ERROR").error.empty());
}

namespace {

// A sampler's output on one H200: `before` samples of import and compile (no step yet), then the
// training's; each lists the training (pid 1000, ours) and the neighbour with `owner`.
std::string sampler(int before, int during, const std::string& owner, bool ours_listed = true) {
  std::string s = "H tick=100 cores=16 tool=nvidia-smi\nV NVIDIA-SMI 580.159.04\n";
  for (int i = 0; i < before + during; ++i) {
    const bool training = i >= before;
    s += "S " + std::to_string(100 + 2 * i) + " cpu=" + std::to_string(100 * i) +
         " psi_cpu=0 psi_mem=0 psi_io=0 mem_kb=1000000 steps=" + (training ? "1" : "0") + "\n";
    s += training ? "G 0, 690.5, 1545, 3201, 60, 70, 100, 0x0000000000000004, 0, 0, 16, 16, 5, 5, 700.00, "
                    "700.00, GPU-h200\n"
                  : "G 0, 80.8, 345, 3201, 39, 41, 0, 0x0000000000000001, 0, 0, 16, 16, 5, 5, 700.00, "
                    "700.00, GPU-h200\n";
    s += "P gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n";
    if (ours_listed) s += "P GPU-h200, 1000, python3, 90000\n";
    s += "P GPU-h200, 484, python3, 1002\nQ\n";
    if (ours_listed) s += "O 1000 ours\n";
    s += "O 484 " + owner + "\n";
  }
  return s + "F\n";
}

cvs::NodeTelemetry summary(const std::string& text) {
  cvs::TelemetryParser p;
  p.feed(text);
  return cvs::summarize_telemetry("h200-node", p);
}

}  // namespace

TEST(GpuProcesses, TheTelemetryNamesTheNeighbourInItsWordsAndItsGate) {
  const auto t = summary(sampler(3, 5, "other"));
  ASSERT_EQ(t.shared_gpu.size(), 1u);
  EXPECT_EQ(t.shared_gpu[0].words(), "GPU 0 shared with pid 484 (python3, 1002 MiB) in 100 % of samples");
  EXPECT_EQ(t.samples_before_training, 3u);
  // The figures are the training's: the busy clock and the power at the cap, not the idle samples'.
  EXPECT_DOUBLE_EQ(t.gpus[0].figures.at("power_w").median, 690.5);
  EXPECT_DOUBLE_EQ(t.gpus[0].figures.at("sm_clock_mhz").min, 1545);
  const auto why = cvs::explain_telemetry(t);
  EXPECT_EQ(why.rfind("GPU 0 shared with pid 484 (python3, 1002 MiB) in 100 % of samples", 0), 0u) << why;
  EXPECT_EQ(why.find("clocked down"), std::string::npos) << why;
  const auto v = cvs::telemetry_violations(t, {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("h200-node: GPU 0 shared with pid 484"), std::string::npos) << v[0];
  cvs::TelemetryGates allow;
  allow.allow_shared_gpu = true;
  EXPECT_TRUE(cvs::telemetry_violations(t, allow).empty());
  // The record keeps it.
  const auto back = cvs::telemetry_from_json(cvs::to_json(t));
  ASSERT_EQ(back.shared_gpu.size(), 1u);
  EXPECT_EQ(back.shared_gpu[0].words(), t.shared_gpu[0].words());
  EXPECT_EQ(back.samples_before_training, 3u);
}

TEST(GpuProcesses, APidOfAnotherNamespaceIsForeignOnlyWhenTheTrainingsOwnAreSeen) {
  // The training's pids are in the list: the namespaces agree, an unseen pid is another's.
  EXPECT_EQ(summary(sampler(0, 4, "unseen")).shared_gpu.size(), 1u);
  // None of the training's: a container's namespace; whose 484 is cannot be told, and that is said.
  const auto t = summary(sampler(0, 4, "unseen", false));
  EXPECT_TRUE(t.shared_gpu.empty());
  bool said = false;
  for (const auto& n : t.notes) said = said || n.find("whose they are cannot be told") != std::string::npos;
  EXPECT_TRUE(said);
}

// The real neighbour session (0.47x its calibration): its record has util 100 %, power at the
// default limit, normal clocks, no throttle reason and no words; with the process list the sampler
// now takes, the words name the neighbour.
TEST(GpuProcesses, TheRealNeighbourSessionIsExplainedByItsProcess) {
  auto r = cvs::test::read_json(cvs::test::data("h200/llama1b_neighbour.results.json"));
  auto& node = r["sweeps"]["BS=4,PRECISION=BF16,SL=2048"]["run"]["nodes"][0];
  auto t = cvs::telemetry_from_json(node["telemetry"]);
  EXPECT_EQ(cvs::explain_telemetry(t), "") << "what the record said then: nothing";
  const auto apps = cvs::parse_nvidia_compute_apps(
      cvs::test::read_file(cvs::test::data("h200/neighbour_query_compute_apps.csv")), {{0, "GPU-h200"}});
  ASSERT_EQ(apps.processes.size(), 1u);
  t.shared_gpu.push_back({apps.processes[0], 1.0, false});
  EXPECT_EQ(cvs::explain_telemetry(t), "GPU 0 shared with pid 484 (python3, 1002 MiB) in 100 % of samples");
}

// The telemetry record inside a results.json is read by the results file's reader: a mistyped
// field is an error naming the file and its pointer (it was read as a default before), an absent
// one its default (records of earlier versions).
TEST(GpuProcesses, AMistypedTelemetryFieldIsNamedByItsPointer) {
  auto r = cvs::test::read_json(cvs::test::data("h200/llama1b_neighbour.results.json"));
  auto& gpu = r["sweeps"]["BS=4,PRECISION=BF16,SL=2048"]["run"]["nodes"][0]["telemetry"]["gpus"][0];
  gpu.erase("pcie_gen_max");
  EXPECT_NO_THROW(cvs::results_from_json(r, "neighbour.json"));
  gpu["power_limit_w"] = "700 W";
  try {
    cvs::results_from_json(r, "neighbour.json");
    FAIL() << "read a string as the power limit";
  } catch (const cvs::ConfigError& e) {
    EXPECT_EQ(e.issues().at(0).file, "neighbour.json");
    EXPECT_EQ(e.issues().at(0).pointer,
              "/sweeps/BS=4,PRECISION=BF16,SL=2048/run/nodes/0/telemetry/gpus/0/power_limit_w");
    EXPECT_EQ(e.issues().at(0).message, "is a string, not a number");
  }
}

// nvidia-smi's "[Not Found]" (a pid of another PID namespace) and a memory it does not report are
// said in words, never printed raw.
TEST(GpuProcesses, AnUnnamedProcessAndUnknownMemoryAreWorded) {
  const auto l = cvs::parse_nvidia_compute_apps(
      "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\nGPU-aaa, 9191, [Not Found], [N/A]\n",
      {{0, "GPU-aaa"}});
  ASSERT_EQ(l.processes.size(), 1u);
  EXPECT_EQ(
      cvs::describe(l.processes[0]),
      "GPU 0: pid 9191 (name not visible here: a process of another container or PID namespace, memory not "
      "reported)");
}
