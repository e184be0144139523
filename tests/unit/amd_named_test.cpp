// The bad AMD GPU inside a node, named: a stand-in amd-smi of 8 MI300X
// (tests/data/telemetry/stand_in/amd_table.py: a double at the vendor tool's process boundary, no
// GPU here; its node shaped on the recorded outputs, AmdSmiRecorded.TheHumanViewsShapeTheStandInsMi300xNode)
// answering the sampler's own amd-smi calls in amd-smi 6.x's and 7.x's shapes, one GPU faulted per
// case; and the recorded MI300X kernel incidents replayed as the sampler sends kernel records.
// The words on a failing gate (explain_telemetry) and the run's notes (telemetry_defects) must
// name GPU 5 and no other; an incident names the GPU at fault and no other as its cause.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cvs/logs/telemetry.hpp"
#include "cvs/probe/gpu_probe.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"
#include "cvs/results/telemetry_record.hpp"
#include "test_helpers.hpp"

using nlohmann::json;

namespace {

// The amd-smi calls the sampler makes (lib/cvs/exec/agent/telemetry.sh): `amd_block KIND ARGS`
// (once: list, static; first and last: bad-pages) and the metric each sample.
std::map<std::string, std::string> sampler_calls() {
  const auto text = cvs::test::read_file(std::string(CVS_SOURCE_ROOT) + "/lib/cvs/exec/agent/telemetry.sh");
  std::map<std::string, std::string> calls;
  const std::regex block(R"(amd_block ([a-z-]+) ([a-z-]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it)
    calls[(*it)[1].str()] = (*it)[2].str() + " --json";
  EXPECT_NE(text.find("amd-smi metric --json"), std::string::npos);
  calls["metric"] = "metric --json";
  EXPECT_EQ(calls.size(), 4u) << "list, static, bad-pages and metric";
  return calls;
}

// 8 healthy MI300X shaped on the recorded samples (the table's "_source" says which figure
// comes from which file): shared with the telemetry e2e.
json healthy_table() {
  return json::parse(cvs::test::read_file(cvs::test::data("telemetry/stand_in/amd_mi300x_8.json")));
}

std::filesystem::path write_table(const json& table) {
  const auto path =
      std::filesystem::temp_directory_path() / ("cvs_amd_table_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << table.dump();
  return path;
}

// One call of the stand-in (amd-smi major version `major`), its lines as the sampler sends them.
std::string ask(const std::filesystem::path& table, int major, const char* phase, const std::string& args,
                const std::string& kind = "") {
  const auto p = cvs::test::run_command("CVS_STAND_IN_TABLE=" + table.string() +
                                        " CVS_STAND_IN_AMD_SMI=" + std::to_string(major) +
                                        " CVS_STAND_IN_PHASE=" + phase + " " + CVS_SOURCE_ROOT +
                                        "/tests/data/telemetry/stand_in/amd_table/amd-smi " + args);
  EXPECT_EQ(p.exit_code, 0) << p.out;
  std::string out = kind.empty() ? "" : "X " + kind + "\n";
  for (std::size_t at = 0; at < p.out.size();) {
    const auto nl = p.out.find('\n', at);
    out += "J " + p.out.substr(at, nl - at) + "\n";
    at = nl == std::string::npos ? p.out.size() : nl + 1;
  }
  return out + "E\n";
}

// A run on node n3: two samples while the GPUs idle (import, compile), four under load; the
// kernel records, if any, in the fourth.
cvs::NodeTelemetry run_on(const json& table, int major, const std::vector<std::string>& kernel = {}) {
  const auto path = write_table(table);
  const auto calls = sampler_calls();
  std::string s = "H tick=100 cores=16 tool=amd-smi\nV stand-in\n";
  for (int i = 0; i < 6; ++i) {
    const char* phase = i >= 2 ? "load" : "idle";
    s += "S " + std::to_string(100 + 5 * i) + " cpu=" + std::to_string(1000 + 500 * i) +
         " psi_cpu=0 psi_mem=0 psi_io=0 mem_kb=16000000 steps=" + (i >= 2 ? "1" : "0") + "\n";
    if (i == 0)
      s += ask(path, major, phase, calls.at("list"), "list") +
           ask(path, major, phase, calls.at("static"), "static");
    s += ask(path, major, phase, calls.at("metric"));
    if (i == 0 || i == 5) s += ask(path, major, phase, calls.at("bad-pages"), "bad-pages");
    if (i == 3)
      for (std::size_t k = 0; k < kernel.size(); ++k)
        s += "K 3," + std::to_string(1200 + k) + ",105000000,-;" + kernel[k] + "\n";
  }
  s += "F\n";
  std::filesystem::remove(path);
  cvs::TelemetryParser p;
  p.feed(s);
  EXPECT_TRUE(p.notes().empty()) << p.notes().front();
  return cvs::summarize_telemetry("n3", p);
}

using cvs::test::joined;
using cvs::test::names_only_gpu5;

struct Fault {
  const char* name;
  json gpu5;          // GPU 5's fields
  const char* words;  // in explain_telemetry
  bool defect;        // in telemetry_defects too
};

// The faults the issue names, each alone on GPU 5 (all under load: the phase "load").
std::vector<Fault> faults() {
  return {
      {"power cap 550 W of 750 W",
       {{"power_cap", 550}, {"phase", {{"load", {{"socket_power", 548}, {"ppt_violation", true}}}}}},
       "GPU 5 power limit lowered to 550 W (it may be 750 W; the node's other GPUs at 750 W) [0000:af:00]",
       true},
      {"x8 at 16 GT/s, replays rising",
       {{"phase", {{"load", {{"pcie_width", 8}, {"pcie_speed", 16}, {"replay_count", 1500}}}}}},
       "GPU 5 PCIe link under load at x8 gen 4 (capable of x16 gen 5) [0000:af:00]",
       true},
      {"gfx clocks 30 % down, thermal violation",
       {{"phase", {{"load", {{"gfx_clk", 1470}, {"hotspot", 98}, {"socket_thermal_violation", true}}}}}},
       "GPU 5 slowed (thermal) in 100 % of samples, hotspot 98 C, clock 1470-1470 MHz (the node's other GPUs "
       "at "
       "2102 MHz) [0000:af:00]",
       false},
      {"a pending bad page",
       {{"phase", {{"load", {{"bad_pages_pending", 1}}}}}},
       "GPU 5 has memory pages pending retirement [0000:af:00]",
       true},
      {"ECC rising",
       {{"phase", {{"load", {{"ecc_uncorrectable", 2}, {"ecc_umc_uncorrectable", 2}}}}}},
       "GPU 5 gained 2 uncorrected ECC error(s) (UMC 2) [0000:af:00]",
       false},
  };
}

}  // namespace

TEST(AmdGpuNamed, AHealthyNodeGivesNoWordsIn6xAnd7x) {
  for (int major : {6, 7}) {
    SCOPED_TRACE(major);
    const auto t = run_on(healthy_table(), major);
    ASSERT_EQ(t.gpus.size(), 8u);
    EXPECT_EQ(t.tool, "amd-smi");
    EXPECT_EQ(t.gpus[5].bus_id, "0000:af:00");
    EXPECT_EQ(t.gpus[5].name, "AMD Instinct MI300X");
    EXPECT_EQ(*t.gpus[5].power_limit_w, 750);
    EXPECT_EQ(*t.gpus[5].power_max_limit_w, 750);
    EXPECT_EQ(*t.gpus[5].pcie_gen_min, 5);
    EXPECT_EQ(*t.gpus[5].pcie_width_max, 16);
    EXPECT_EQ(t.gpus[5].figures.at("sm_clock_busy_mhz").median, 2102);
    EXPECT_EQ(*t.gpus[5].pcie_replays_delta, 0);
    EXPECT_EQ(*t.gpus[5].pages_retired, 0);
    EXPECT_EQ(cvs::explain_telemetry(t), "");
    EXPECT_TRUE(cvs::telemetry_defects(t).empty()) << joined(cvs::telemetry_defects(t));
  }
}

TEST(AmdGpuNamed, EachFaultOfGpu5IsNamedAloneIn6xAnd7x) {
  for (int major : {6, 7})
    for (const auto& f : faults()) {
      SCOPED_TRACE(std::to_string(major) + ".x: " + f.name);
      auto table = healthy_table();
      table["gpus"][5].update(f.gpu5);
      const auto t = run_on(table, major);
      const auto why = cvs::explain_telemetry(t);
      EXPECT_NE(why.find(f.words), std::string::npos) << why;
      names_only_gpu5(why, f.name);
      const auto defects = joined(cvs::telemetry_defects(t));
      if (f.defect) {
        EXPECT_NE(defects.find(f.words), std::string::npos) << defects;
        names_only_gpu5(defects, f.name);
      } else {
        EXPECT_EQ(defects, "");
      }
    }
}

// The issue's GPU 5 with every fault at once: a gate forced to fail gets its words, the ECC gate
// and the throttle gate fail naming GPU 5 alone, for both major versions; the record round-trips.
TEST(AmdGpuNamed, EveryFaultAtOnceReachesTheGatesAndTheRecord) {
  auto table = healthy_table();
  for (const auto& f : faults()) {
    auto g = f.gpu5;
    if (g.contains("phase")) table["gpus"][5]["phase"]["load"].update(g["phase"]["load"]);
    g.erase("phase");
    table["gpus"][5].update(g);
  }
  for (int major : {6, 7}) {
    SCOPED_TRACE(major);
    const auto t = run_on(table, major);
    const auto why = cvs::explain_telemetry(t);
    for (const auto& f : faults()) {
      if (std::string(f.name).rfind("gfx", 0) == 0) continue;
      EXPECT_NE(why.find(f.words), std::string::npos) << f.name << ": " << why;
    }
    // Its lowered cap is a slowing reason beside the thermal violation.
    EXPECT_NE(
        why.find(
            "GPU 5 slowed (power cap, thermal) in 100 % of samples, hotspot 98 C, clock 1470-1470 MHz (the "
            "node's other GPUs at 2102 MHz) [0000:af:00]"),
        std::string::npos)
        << why;
    EXPECT_NE(why.find("GPU 5 PCIe link errors during the run: 1500 replays [0000:af:00]"), std::string::npos)
        << why;
    names_only_gpu5(why, "all");
    cvs::TelemetryGates gates;
    gates.max_throttled_fraction = 0.05;
    const auto v = joined(cvs::telemetry_violations(t, gates));
    EXPECT_NE(
        v.find("n3: GPU 5 gained 2 uncorrected ECC error(s) (UMC 2) during the run (at most 0) [0000:af:00]"),
        std::string::npos)
        << v;
    EXPECT_NE(v.find("n3: GPU 5 was slowed in 100 % of the samples"), std::string::npos) << v;
    names_only_gpu5(v, "violations");
    const auto back = cvs::telemetry_from_json(cvs::to_json(t));
    EXPECT_EQ(cvs::explain_telemetry(back), why);
    EXPECT_EQ(back.gpus[5].ecc_uncorrected_blocks.at("UMC"), 2);
    EXPECT_EQ(*back.gpus[5].pcie_replays_delta, 1500);
  }
}

// Every GPU capped alike below its maximum is the node's setting: said, no GPU named.
TEST(AmdGpuNamed, ACapEveryGpuSharesIsTheNodesNotAGpus) {
  auto table = healthy_table();
  for (auto& g : table["gpus"]) g["power_cap"] = 550;
  const auto t = run_on(table, 7);
  const auto defects = joined(cvs::telemetry_defects(t));
  EXPECT_EQ(defects, "every GPU's power limit is 550 W (they may be 750 W)\n");
  for (const auto& g : t.gpus) EXPECT_FALSE(cvs::power_limit_lowered(g, t)) << g.index;
}

// The setup stage's probe through the same stand-in: name, address and cap per GPU; GPU 5's
// lowered cap and narrower link maximum said as unlike its siblings.
TEST(AmdGpuNamed, TheProbeSaysWhatEachGpuIsAndWhichIsUnlikeItsSiblings) {
  for (int major : {6, 7}) {
    SCOPED_TRACE(major);
    auto table = healthy_table();
    table["gpus"][5]["power_cap"] = 550;
    table["gpus"][5]["max_pcie_width"] = 8;
    const auto path = write_table(table);
    const auto program = path.string() + ".sh";
    std::ofstream(program) << cvs::gpu_probe_command()[2];
    const auto r = cvs::test::run_command(
        "PATH=" + std::string(CVS_SOURCE_ROOT) +
        "/tests/data/telemetry/stand_in/amd_table:$PATH CVS_STAND_IN_TABLE=" + path.string() +
        " CVS_STAND_IN_AMD_SMI=" + std::to_string(major) + " CVS_STAND_IN_PHASE=idle sh " + program);
    std::filesystem::remove(path);
    std::filesystem::remove(program);
    const auto p = cvs::parse_probe_output(r.out);
    ASSERT_EQ(p.devices.size(), 8u) << r.out.substr(0, 400);
    EXPECT_EQ(p.devices[5].name, "AMD Instinct MI300X");
    EXPECT_EQ(p.devices[5].arch, "gfx942");
    EXPECT_EQ(p.devices[5].bus_id, "0000:af:00");
    EXPECT_EQ(*p.devices[0].power_cap_w, 750);
    EXPECT_EQ(*p.devices[0].pcie_gen_max, 5);
    EXPECT_EQ(
        cvs::describe_gpus(p).rfind(
            "8x AMD Instinct MI300X, power cap 750 W (at most 750 W), PCIe x16 gen 5 at most (0=0000:0c:00",
            0),
        0u)
        << cvs::describe_gpus(p);
    EXPECT_EQ(
        cvs::gpus_unlike_their_siblings(p),
        (std::vector<std::string>{"GPU 5 [0000:af:00]: power cap 550 W, the node's other GPUs 750 W",
                                  "GPU 5 [0000:af:00]: PCIe link at most x8, the node's other GPUs x16"}));
    EXPECT_TRUE(cvs::check_probe(p, "mi300x", 8).empty()) << joined(cvs::check_probe(p, "mi300x", 8));
  }
}

// ---- the recorded MI300X kernel incidents, replayed ------------------------------------------

namespace {

// A recorded dmesg file as the sampler's kernel records ("[ 8390.785329] text" -> its time), the
// node's amd-smi list first.
cvs::TelemetryParser replay(const std::string& file, const std::vector<std::string>& bdfs) {
  cvs::TelemetryParser p;
  std::string s =
      "H tick=100 cores=16 tool=amd-smi\nS 8000 cpu=1 psi_cpu=0 psi_mem=0 psi_io=0 mem_kb=1 steps=1\nX "
      "list\n";
  json list = json::array();
  for (std::size_t i = 0; i < bdfs.size(); ++i) list.push_back({{"gpu", i}, {"bdf", bdfs[i]}});
  s += "J " + list.dump() + "\nE\n";
  const auto text = cvs::test::read_file(cvs::test::data("amd/" + file));
  const std::regex dmesg(R"(^\[ *(\d+)\.(\d+)\] (.*)$)"), journal(R"(^.* kernel: (.*)$)");
  std::size_t seq = 1;
  for (std::size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    const auto line = text.substr(at, nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    std::smatch m;
    if (std::regex_match(line, m, dmesg))
      s += "K 3," + std::to_string(seq++) + "," + m[1].str() + m[2].str() + ",-;" + m[3].str() + "\n";
    else if (std::regex_match(line, m, journal))
      s += "K 3," + std::to_string(seq++) + ",5000000000,-;" + m[1].str() + "\n";
  }
  p.feed(s + "F\n");
  return p;
}

// The incident's node: its four recorded addresses at indices 1, 3, 5, 6 (its list was not
// recorded: the other four are placeholders).
const std::vector<std::string> kIncidentNode = {"0000:0a:00.0", "0000:68:00.0", "0000:1a:00.0",
                                                "0000:9e:00.0", "0000:2a:00.0", "0000:d4:00.0",
                                                "0000:e6:00.0", "0000:3a:00.0"};

}  // namespace

TEST(AmdKernel, AnUncorrectableErrorBlamesItsGpuAndTheHivesRecordsAreContext) {
  const auto p = replay("dmesg_mi300x_ue_aca_reset_begin_issue4021.txt", kIncidentNode);
  const auto* k = p.kernel_failure();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->pattern->name, "amdgpu_uncorrectable");
  EXPECT_EQ(k->device(), "GPU 1 [0000:68:00]");
  int context = 0;
  for (const auto& line : p.kernel()) {
    EXPECT_EQ(line.incident, 1);
    if (line.bus_id == "0000:68:00") {
      EXPECT_FALSE(line.context) << line.text;
    } else {
      context += line.context;
    }
  }
  EXPECT_EQ(context, 3) << "the ACA records of GPUs 3, 5 and 6, one line each, their entries counted";
  cvs::TelemetryParser copy = p;
  const auto t = cvs::summarize_telemetry("n1", copy);
  const auto why = cvs::explain_telemetry(t);
  EXPECT_EQ(why.rfind("GPU 1: kernel: an uncorrectable hardware error (RAS) on the GPU (", 0), 0u) << why;
  EXPECT_NE(why.find("then, its context (not their fault): GPU 3 ACA hardware error records"),
            std::string::npos)
      << why;
  for (int other : {3, 5, 6})
    EXPECT_EQ(why.find("GPU " + std::to_string(other) + ": kernel"), std::string::npos) << why;
  EXPECT_NE(why.find("GPU 1: kernel: an AMD GPU was reset"), std::string::npos) << "its own reset: " << why;
}

TEST(AmdKernel, CorrectableErrorsOnAnotherGpuAreContextOfTheUncorrectableOne) {
  // bd:00.0's uncorrectable error, then 3d:00.0's ACA records and correctable gfx errors.
  const auto p =
      replay("dmesg_mi300x_ue_aca_correctable_gfx_issue4021.txt", {"0000:3d:00.0", "0000:bd:00.0"});
  ASSERT_NE(p.kernel_failure(), nullptr);
  EXPECT_EQ(p.kernel_failure()->device(), "GPU 1 [0000:bd:00]");
  for (const auto& line : p.kernel()) EXPECT_EQ(line.context, line.bus_id == "0000:3d:00") << line.text;
}

TEST(AmdKernel, APageFaultNamesItsGpuAndProcess) {
  const auto p = replay("dmesg_mi300x_page_fault_vm_l2_issue4021.txt", {"0000:1b:00.0", "0000:3d:00.0"});
  ASSERT_EQ(p.kernel().size(), 1u);
  const auto& k = p.kernel()[0];
  EXPECT_EQ(k.pattern->name, "amdgpu_page_fault");
  EXPECT_EQ(k.device(), "GPU 1 [0000:3d:00]");
  EXPECT_EQ(k.pid, 6071);
  EXPECT_EQ(k.process, "python3.12");
  EXPECT_EQ(k.repeats, 3) << "retry, no-retry and the VM_L2 status: one fault";
  EXPECT_EQ(
      k.meaning(),
      "a GPU memory page fault (a process on the GPU touched memory it may not) (pid 6071, python3.12)");
}

TEST(AmdKernel, AnOldRingTimeoutTakesItsGpuFromTheResetLineAfterIt) {
  const auto p = replay("dmesg_ring_timeout_no_bdf_then_reset_apu_rocr180.txt", {"0000:30:00.0"});
  const auto* k = p.kernel_failure();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->pattern->name, "amdgpu_ring_timeout");
  EXPECT_EQ(k->device(), "GPU 0 [0000:30:00]");
}

TEST(AmdKernel, ANewRingTimeoutNamesItsGpuAndProcess) {
  const auto p = replay("dmesg_ring_timeout_with_bdf_rocm72_issue5997.txt", {"0000:03:00.0"});
  const auto* k = p.kernel_failure();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->pattern->name, "amdgpu_ring_timeout");
  EXPECT_EQ(k->device(), "GPU 0 [0000:03:00]");
  EXPECT_EQ(k->pid, 7401);
  EXPECT_EQ(k->process, "firefox-bin");
  for (const auto& line : p.kernel()) EXPECT_FALSE(line.context) << line.text;
}
