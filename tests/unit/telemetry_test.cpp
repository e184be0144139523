// Telemetry: the sampler's lines parsed, the vendor tools' recorded outputs read (the formats of
// tests/data/gpu_probe: no GPU here), the kernel log catalog, the summary, the gates and the words.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "cvs/logs/telemetry.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"
#include "cvs/results/telemetry_record.hpp"
#include "test_helpers.hpp"

namespace {

std::string recorded(const std::string& name) {
  return cvs::test::read_file(cvs::test::data("telemetry/" + name));
}

// A sampler's output: a header, then one sample every 5 s whose CPU ticks grow by `cpu` CPUs'
// worth and whose PSI cpu total by `psi` of the interval, each followed by a tool output.
std::string sampler_output(const std::vector<std::string>& tool_outputs, double cpu, double psi,
                           const std::string& tool = "nvidia-smi") {
  std::string s = "H tick=100 cores=2 tool=" + tool + " sid=42\nV NVIDIA-SMI 550.54.15\n";
  double ticks = 1000, psi_us = 5e6;
  for (std::size_t i = 0; i < tool_outputs.size(); ++i) {
    s += "S " + std::to_string(100.0 + 5.0 * static_cast<double>(i)) +
         " cpu=" + std::to_string(static_cast<long long>(ticks)) +
         " psi_cpu=" + std::to_string(static_cast<long long>(psi_us)) +
         " psi_mem=0 psi_io=100 mem_kb=16000000\n";
    ticks += cpu * 100 * 5;
    psi_us += psi * 5e6;
    if (tool == "nvidia-smi") {
      std::string out = tool_outputs[i];
      for (std::size_t at = 0; at < out.size();) {
        const auto nl = out.find('\n', at);
        s += "G " + out.substr(at, nl - at) + "\n";
        at = nl == std::string::npos ? out.size() : nl + 1;
      }
    } else if (tool != "none") {
      std::string out = tool_outputs[i];
      for (std::size_t at = 0; at < out.size();) {
        const auto nl = out.find('\n', at);
        s += "J " + out.substr(at, nl - at) + "\n";
        at = nl == std::string::npos ? out.size() : nl + 1;
      }
      s += "E\n";
    }
  }
  return s + "F\n";
}

cvs::NodeTelemetry summary_of(const std::string& text, std::size_t split_every = 0) {
  cvs::TelemetryParser p;
  if (split_every == 0) {
    p.feed(text);
  } else {
    for (std::size_t at = 0; at < text.size(); at += split_every) p.feed(text.substr(at, split_every));
  }
  return cvs::summarize_telemetry("gpu-07", p);
}

}  // namespace

TEST(Telemetry, NvidiaSmiRowsReadEveryFigureAndNotAvailableIsAbsent) {
  const auto g =
      cvs::parse_nvidia_smi_row("3, 699.80, 1410, 2619, 88, 59, 100, 0x0000000000000044, 0, 0, 16, 16, 5, 5");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->index, 3);
  EXPECT_DOUBLE_EQ(*g->power_w, 699.8);
  EXPECT_DOUBLE_EQ(*g->sm_clock_mhz, 1410);
  EXPECT_DOUBLE_EQ(*g->temp_c, 88);
  EXPECT_EQ(g->throttle, (std::vector<std::string>{"power cap", "thermal (hardware)"}));
  const auto na = cvs::parse_nvidia_smi_row(
      "0, [N/A], 1980, 2619, 61, [N/A], 100, 0x0000000000000001, 0, 0, 16, 16, 5, 5");
  ASSERT_TRUE(na);
  EXPECT_FALSE(na->power_w);
  EXPECT_FALSE(na->temp_mem_c);
  EXPECT_TRUE(na->throttle.empty()) << "idle is no slowdown";
  EXPECT_FALSE(cvs::parse_nvidia_smi_row("Failed to initialize NVML: Driver/library version mismatch"));
}

TEST(Telemetry, ARecordedThrottlingEpisodeReachesTheRecordTheWordsAndTheGate) {
  const auto t = summary_of(
      sampler_output({recorded("nvidia_smi_h100_healthy.csv"), recorded("nvidia_smi_h100_throttle.csv"),
                      recorded("nvidia_smi_h100_throttle.csv"), recorded("nvidia_smi_h100_throttle.csv"),
                      recorded("nvidia_smi_h100_healthy.csv")},
                     1.9, 0.01),
      7);  // bytes split anywhere
  EXPECT_EQ(t.tool, "nvidia-smi");
  EXPECT_EQ(t.samples, 5u);
  ASSERT_EQ(t.gpus.size(), 8u);
  const auto& g3 = t.gpus[3];
  EXPECT_DOUBLE_EQ(g3.throttled_fraction, 0.6);
  EXPECT_DOUBLE_EQ(g3.throttle_reasons.at("thermal (hardware)"), 0.6);
  EXPECT_DOUBLE_EQ(g3.figures.at("sm_clock_mhz").min, 1410);
  EXPECT_DOUBLE_EQ(g3.figures.at("sm_clock_mhz").max, 1980);
  EXPECT_DOUBLE_EQ(t.gpus[0].throttled_fraction, 0.0);
  const auto why = cvs::explain_telemetry(t);
  EXPECT_NE(why.find("GPU 3 slowed"), std::string::npos) << why;
  EXPECT_NE(why.find("in 60 % of samples"), std::string::npos) << why;
  EXPECT_NE(why.find("88 C"), std::string::npos) << why;
  cvs::TelemetryGates gates;
  EXPECT_TRUE(cvs::telemetry_violations(t, gates).empty()) << "the defaults never fail on throttling";
  gates.max_throttled_fraction = 0.5;
  const auto v = cvs::telemetry_violations(t, gates);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("gpu-07: GPU 3 was slowed in 60 %"), std::string::npos) << v[0];
  // The record round-trips through results.json, its words and series with it.
  const auto back = cvs::telemetry_from_json(cvs::to_json(t));
  EXPECT_DOUBLE_EQ(back.gpus[3].throttled_fraction, 0.6);
  EXPECT_EQ(back.gpus[3].sm_clock_mhz.size(), 5u);
  EXPECT_EQ(cvs::explain_telemetry(back), why);
}

// A real H200 (tests/device/h200_check.sh): idle samples, then a bf16 matmul loop. Under the load
// it draws 690 of its 700 W with "power cap" set and the SM clock at 1470-1545 MHz: that is the
// GPU working as built, not a slowdown, and no gate or word may say otherwise.
TEST(Telemetry, ARealH200AtItsDefaultPowerLimitIsNotSlowed) {
  for (const char* f : {"nvidia_smi_h200_load_sampler.txt", "nvidia_smi_h200_load_sampler_14_fields.txt"}) {
    SCOPED_TRACE(f);
    const auto t = summary_of(recorded(f));
    EXPECT_EQ(t.tool, "nvidia-smi");
    EXPECT_EQ(t.cores, 16);
    ASSERT_EQ(t.gpus.size(), 1u);
    const auto& g = t.gpus[0];
    EXPECT_GT(g.power_capped_fraction, 0.5);
    EXPECT_DOUBLE_EQ(g.throttled_fraction, 0.0);
    EXPECT_TRUE(g.throttle_reasons.empty());
    EXPECT_GT(g.figures.at("power_w").max, 690);
    EXPECT_EQ(cvs::explain_telemetry(t).find("GPU 0"), std::string::npos) << cvs::explain_telemetry(t);
    cvs::TelemetryGates gates;
    gates.max_throttled_fraction = 0.05;
    EXPECT_TRUE(cvs::telemetry_violations(t, gates).empty());
  }
  const auto t = summary_of(recorded("nvidia_smi_h200_load_sampler.txt"));
  EXPECT_DOUBLE_EQ(*t.gpus[0].power_limit_w, 700);
  EXPECT_DOUBLE_EQ(*t.gpus[0].power_default_limit_w, 700);
}

// The same recording with the enforced limit edited to 500 W (a limit an operator lowered; the
// device machine's settings are not ours to change): now the cap is a slowdown, and said.
TEST(Telemetry, ALoweredPowerLimitMakesTheCapASlowdownAndIsSaid) {
  std::string text = recorded("nvidia_smi_h200_load_sampler.txt");
  for (std::size_t at; (at = text.find(", 700.00, 700.00")) != std::string::npos;)
    text.replace(at, 16, ", 500.00, 700.00");
  const auto t = summary_of(text);
  const auto& g = t.gpus[0];
  EXPECT_DOUBLE_EQ(g.power_capped_fraction, 0.0);
  EXPECT_GT(g.throttled_fraction, 0.5);
  EXPECT_GT(g.throttle_reasons.at("power cap"), 0.5);
  const auto why = cvs::explain_telemetry(t);
  EXPECT_NE(why.find("GPU 0 slowed (power cap)"), std::string::npos) << why;
  EXPECT_NE(why.find("GPU 0 power limit lowered to 500 W (default 700 W)"), std::string::npos) << why;
  cvs::TelemetryGates gates;
  gates.max_throttled_fraction = 0.05;
  ASSERT_EQ(cvs::telemetry_violations(t, gates).size(), 1u);
  const auto back = cvs::telemetry_from_json(cvs::to_json(t));
  EXPECT_DOUBLE_EQ(*back.gpus[0].power_limit_w, 500);
  EXPECT_EQ(cvs::explain_telemetry(back), why);
}

TEST(Telemetry, AnEccIncrementFailsByDefaultAndANarrowedPcieLinkIsSaid) {
  auto t = summary_of(
      sampler_output({recorded("nvidia_smi_h100_healthy.csv"), recorded("nvidia_smi_h100_ecc.csv")}, 1.9, 0));
  EXPECT_DOUBLE_EQ(*t.gpus[5].ecc_uncorrected_delta, 2);
  EXPECT_DOUBLE_EQ(*t.gpus[5].ecc_corrected_delta, 14);
  const auto v = cvs::telemetry_violations(t, {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("GPU 5 gained 2 uncorrected ECC error(s)"), std::string::npos) << v[0];
  t = summary_of(sampler_output(
      {recorded("nvidia_smi_h100_pcie_x8.csv"), recorded("nvidia_smi_h100_pcie_x8.csv")}, 1.9, 0));
  const auto why = cvs::explain_telemetry(t);
  EXPECT_NE(why.find("GPU 2 PCIe link under load at x8 gen 4 (capable of x16 gen 5)"), std::string::npos)
      << why;
}

TEST(Telemetry, AmdSmiAndRocmSmiOutputsReadAsWell) {
  auto t = summary_of(sampler_output(
      {recorded("amd_smi_metric_mi300x_healthy.json"), recorded("amd_smi_metric_mi300x_throttle.json"),
       recorded("amd_smi_metric_mi300x_ecc.json")},
      1.9, 0, "amd-smi"));
  ASSERT_EQ(t.gpus.size(), 8u) << (t.notes.empty() ? "" : t.notes[0]);
  EXPECT_NEAR(t.gpus[6].throttled_fraction, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(t.gpus[6].figures.at("temp_hotspot_c").max, 104);
  EXPECT_DOUBLE_EQ(t.gpus[6].figures.at("sm_clock_mhz").min, 1420);
  EXPECT_DOUBLE_EQ(*t.gpus[1].ecc_uncorrected_delta, 1);
  EXPECT_DOUBLE_EQ(*t.gpus[0].pcie_width_min, 16);
  t = summary_of(sampler_output(
      {recorded("rocm_smi_mi300x_healthy.json"), recorded("rocm_smi_mi300x_hot.json")}, 1.9, 0, "rocm-smi"));
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_DOUBLE_EQ(t.gpus[0].figures.at("temp_hotspot_c").max, 105);
  EXPECT_DOUBLE_EQ(t.gpus[0].figures.at("sm_clock_mhz").min, 1300);
  EXPECT_DOUBLE_EQ(t.gpus[0].figures.at("power_w").median, 705);
  const auto why = cvs::explain_telemetry(t);
  EXPECT_NE(
      why.find(
          "GPU 0 clocked down to 1300 MHz under load (the node's other GPUs at 2100 MHz), hotspot 105 C"),
      std::string::npos)
      << why;
}

TEST(Telemetry, OutputThatDoesNotParseIsANoteNamingTheToolAndItsVersionNeverACrash) {
  std::string s =
      "H tick=100 cores=2 tool=amd-smi sid=1\nV AMDSMI Tool: 24.6.2\nS 1 cpu=1 psi_cpu=- psi_mem=- psi_io=- "
      "mem_kb=-\n"
      "J ERROR: unable to detect a driver\nE\nS 6 cpu=2 psi_cpu=- psi_mem=- psi_io=- mem_kb=-\nJ "
      "{\"gpu_data\": [\nE\n"
      "N kernel log not readable: dd: failed to open '/dev/kmsg': Operation not permitted\n";
  const auto t = summary_of(s);
  ASSERT_GE(t.notes.size(), 2u);
  EXPECT_NE(t.notes[0].find("amd-smi output does not parse (AMDSMI Tool: 24.6.2)"), std::string::npos)
      << t.notes[0];
  EXPECT_NE(t.notes.back().find("kernel log not readable"), std::string::npos);
  EXPECT_FALSE(t.psi_cpu) << "PSI not readable: absent, never invented";
  ASSERT_TRUE(t.cpu_share);
  EXPECT_NEAR(t.cpu_share->median, 0.002, 1e-12) << "one tick in 5 s";
}

TEST(Telemetry, TheKernelCatalogNamesXidsAmdgpuTimeoutsAndOomKills) {
  int xid = 0;
  const auto* p =
      cvs::match_kernel_line("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", &xid);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "nvidia_xid");
  EXPECT_EQ(xid, 79);
  EXPECT_TRUE(p->fails);
  p = cvs::match_kernel_line(
      "amdgpu 0000:0a:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=123, emitted seq=125");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "amdgpu_ring_timeout");
  p = cvs::match_kernel_line("Memory cgroup out of memory: Killed process 4242 (python3) total-vm:1234kB");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->kind, cvs::KernelPattern::Kind::OomKill);
  EXPECT_FALSE(p->fails) << "another process's OOM kill is recorded, not a failure";
  EXPECT_EQ(cvs::match_kernel_line("IPv6: ADDRCONF(NETDEV_CHANGE): veth0: link becomes ready"), nullptr);
  EXPECT_EQ(cvs::match_kernel_line("br0: port 1(veth-a) entered disabled state"), nullptr);
  // Through the parser: only catalog lines are kept, with the Xid's meaning.
  cvs::TelemetryParser parser;
  parser.feed(
      "K 3,1001,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
      "K 6,1002,5100000,-;usb 1-1: new high-speed USB device\n");
  const auto lines = parser.take_new_kernel_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_DOUBLE_EQ(lines[0].t, 5.0);
  EXPECT_EQ(lines[0].meaning(), "NVIDIA Xid 79: the GPU has fallen off the bus");
  EXPECT_TRUE(parser.take_new_kernel_lines().empty()) << "each line taken once";
}

TEST(Telemetry, AStarvedTrainingIsSaidWithItsCpuShareAndPsi) {
  const auto t = summary_of(sampler_output({"", "", "", ""}, 0.15, 0.84, "none"));
  ASSERT_TRUE(t.cpu_share);
  EXPECT_NEAR(t.cpu_share->median, 0.15, 1e-9);
  EXPECT_NEAR(t.psi_cpu->median, 0.84, 1e-9);
  const auto why = cvs::explain_telemetry(t);
  EXPECT_NE(why.find("the training had 0.15 CPUs: PSI cpu some 84 %"), std::string::npos) << why;
  cvs::TelemetryGates gates;
  gates.min_cpu_share = 1.0;
  ASSERT_EQ(cvs::telemetry_violations(t, gates).size(), 1u);
  EXPECT_TRUE(cvs::explain_telemetry(summary_of(sampler_output({"", "", ""}, 1.95, 0.01, "none"))).empty())
      << "a healthy CPU run has nothing to explain";
}
