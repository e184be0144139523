// Every recorded AMD output in tests/data/amd (copied unchanged from shared/data/amd; each file's
// source in its SOURCES.md: ROCm's amd-smi changelog and docs 6.1 -> 7.0, a ROCm blog's MI300X
// session, an MI350X PR, kernel logs of real MI300X incidents from ROCm's issue tracker), read by
// the code that reads it on a node (logs/amd_smi, logs/telemetry's kernel lines, the probe),
// each test asserting the figures the file shows.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "cvs/logs/amd_smi.hpp"
#include "cvs/logs/telemetry.hpp"
#include "cvs/probe/gpu_probe.hpp"
#include "test_helpers.hpp"

namespace {

std::string amd(const std::string& name) {
  return cvs::test::read_file(cvs::test::data("amd/" + name));
}

}  // namespace

TEST(AmdSmiRecorded, ListGivesEachGpusAddressWithItsDomain) {
  const auto blog = cvs::parse_amd_smi_list(amd("amd_smi_list_mi300x_rocmblog.txt"));
  ASSERT_EQ(blog.size(), 3u);  // the rest of the eight is "[output truncated]" in the source
  EXPECT_EQ(blog[0].bus_id, "0000:05:00");
  EXPECT_EQ(blog[0].bdf, "0000:05:00.0");
  EXPECT_EQ(blog[1].bus_id, "0000:26:00");
  EXPECT_EQ(blog[2].bus_id, "0000:46:00");
  EXPECT_EQ(blog[2].uuid, "97ff74a1-0000-1000-8065-fa81273af9ce");
  const auto v63 = cvs::parse_amd_smi_list(amd("amd_smi_list_changelog63.txt"));
  ASSERT_EQ(v63.size(), 2u);
  EXPECT_EQ(v63[1].index, 1);
  EXPECT_EQ(v63[1].bus_id, "0000:26:00");
  EXPECT_EQ(v63[1].partition, 0);
  // 6.4's list -e, indented as the changelog prints it.
  const auto v64 = cvs::parse_amd_smi_list(amd("amd_smi_list_e_hip_id_changelog640.txt"));
  ASSERT_EQ(v64.size(), 1u);
  EXPECT_EQ(v64[0].bus_id, "0000:23:00");
}

TEST(AmdSmiRecorded, FourMi300aOnDomains0To3AreFourGpus) {
  const auto help = amd("amd_smi_list_help_bdf_domains_mi300a_amdsmi_docs.txt");
  std::set<std::string> ids;
  const std::regex bdf(R"(BDF: ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9]))");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), bdf); it != std::sregex_iterator(); ++it)
    ids.insert(cvs::normalize_bus_id((*it)[1].str()));
  EXPECT_EQ(ids, (std::set<std::string>{"0000:01:00", "0001:01:00", "0002:01:00", "0003:01:00"}));
}

TEST(AmdSmiRecorded, TopologyAndXgmiNameTheSameEightGpus) {
  // topology's full addresses and xgmi's short ones ("05:00.0") are one form once normalised.
  const auto topo = amd("amd_smi_topology_bdf_mi300x_rocmblog.txt");
  const auto xgmi = amd("amd_smi_xgmi_mi300x_rocmblog.txt");
  std::set<std::string> full, shortened;
  const std::regex f(R"(\b([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9])\b)");
  for (auto it = std::sregex_iterator(topo.begin(), topo.end(), f); it != std::sregex_iterator(); ++it)
    full.insert(cvs::normalize_bus_id((*it)[1].str()));
  const auto header = xgmi.substr(0, xgmi.find("GPU0"));
  const std::regex s(R"(\b([0-9a-f]{2}:[0-9a-f]{2}\.[0-9])\b)");
  for (auto it = std::sregex_iterator(header.begin(), header.end(), s); it != std::sregex_iterator(); ++it)
    shortened.insert(cvs::normalize_bus_id((*it)[1].str()));
  EXPECT_EQ(full.size(), 8u);
  EXPECT_EQ(full, shortened);
  EXPECT_TRUE(full.count("0000:e5:00"));
}

TEST(AmdSmiRecorded, StaticGivesNameAddressLinkMaximaAndPowerCaps) {
  const auto blog = cvs::parse_amd_smi_static(amd("amd_smi_static_mi300x_rocmblog.txt"));
  ASSERT_EQ(blog.size(), 1u);
  EXPECT_EQ(blog[0].market_name, "MI300X-O");
  EXPECT_EQ(blog[0].bus_id, "0000:05:00");
  EXPECT_EQ(*blog[0].pcie_width_max, 16);
  EXPECT_EQ(*blog[0].pcie_rate_max, 32);
  EXPECT_EQ(cvs::pcie_gen_of_rate(*blog[0].pcie_rate_max), 5.0);
  EXPECT_FALSE(blog[0].power_cap_w) << "no LIMIT section in this answer";
  const auto mi350 = cvs::parse_amd_smi_static(amd("amd_smi_static_bus_ras_mi350x_pr2987.txt"));
  ASSERT_EQ(mi350.size(), 1u);
  EXPECT_EQ(mi350[0].market_name, "AMD Instinct MI350X");
  EXPECT_EQ(mi350[0].bus_id, "0000:05:00");
  EXPECT_EQ(*mi350[0].pcie_rate_max, 32);
  const auto limit = cvs::parse_amd_smi_static(amd("amd_smi_static_limit_text_changelog612.txt"));
  ASSERT_EQ(limit.size(), 2u);
  EXPECT_EQ(*limit[0].power_cap_w, 203);
  EXPECT_EQ(*limit[0].power_max_w, 203);
  EXPECT_EQ(*limit[1].power_cap_w, 213);
  EXPECT_EQ(*limit[1].power_max_w, 213);
}

TEST(AmdSmiRecorded, StaticJsonSizesReachTheProbe) {
  // `amd-smi static --json | jq '.[0]["vram"]'`: the size as {"value", "unit"}.
  auto vram = amd("amd_smi_static_json_vram_mi300x_rocmblog.txt");
  vram = vram.substr(vram.find('{'));
  const auto p = cvs::parse_amd_smi_json("[{\"gpu\": 0, \"vram\": " + vram + "}]", "");
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_NEAR(*p.devices[0].total_gb, 196.592, 1e-9);
}

TEST(AmdSmiRecorded, MetricUnderLoadOnAnMi300x) {
  const auto g = cvs::parse_amd_smi_metric(amd("amd_smi_metric_text_mi300x_rocmblog.txt"));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(*g[0].util_pct, 100);
  EXPECT_EQ(*g[0].power_w, 234);
  EXPECT_EQ(*g[0].sm_clock_mhz, 2102) << "the median of GFX_0..2: 2102, 2101, 2107";
  EXPECT_TRUE(g[0].throttle.empty()) << "UNTHROTTLED";
}

TEST(AmdSmiRecorded, MetricPowerJsonOf610) {
  const auto g = cvs::parse_amd_smi_metric(amd("amd_smi_metric_power_json_units_changelog610.txt"));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(*g[0].power_w, 10);
  EXPECT_TRUE(g[0].throttle.empty());
}

TEST(AmdSmiRecorded, MetricPcieAndThrottleSectionsOf63) {
  const auto pcie = cvs::parse_amd_smi_metric(amd("amd_smi_metric_pcie_text_changelog63.txt"));
  ASSERT_EQ(pcie.size(), 2u);
  for (const auto& g : pcie) {
    EXPECT_EQ(*g.pcie_width, 16);
    EXPECT_EQ(*g.pcie_gen, 5) << "32 GT/s";
    EXPECT_EQ(*g.pcie_replays, 0);
    EXPECT_EQ(*g.pcie_recoveries, 0);
    EXPECT_EQ(*g.pcie_naks, 0);
  }
  const auto thr = cvs::parse_amd_smi_metric(amd("amd_smi_metric_throttle_mi300_changelog63.txt"));
  ASSERT_EQ(thr.size(), 2u);
  EXPECT_TRUE(thr[0].throttle.empty()) << "every violation NOT ACTIVE, 0 %";
  EXPECT_TRUE(thr[1].throttle.empty());
  // The same answer with GPU 1's socket thermal violation active (the one field edited).
  auto text = amd("amd_smi_metric_throttle_mi300_changelog63.txt");
  const auto second = text.find("GPU: 1");
  const auto at = text.find("SOCKET_THERMAL_VIOLATION_STATUS: NOT ACTIVE", second);
  text.replace(at, 43, "SOCKET_THERMAL_VIOLATION_STATUS: ACTIVE");
  const auto hot = cvs::parse_amd_smi_metric(text);
  EXPECT_TRUE(hot[0].throttle.empty());
  EXPECT_EQ(hot[1].throttle, std::vector<std::string>{"thermal"});
}

TEST(AmdSmiRecorded, MetricEccTotalsAndBlocks) {
  const auto both = cvs::parse_amd_smi_metric(amd("amd_smi_metric_ecc_and_blocks_text_changelog611.txt"));
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(*both[0].ecc_corrected, 0);
  EXPECT_EQ(*both[0].ecc_uncorrected, 0);
  EXPECT_EQ(both[0].ecc_block_uncorrected.size(), 2u) << "UMC and SDMA before the source's \"...\"";
  const auto blocks = cvs::parse_amd_smi_metric(amd("amd_smi_metric_ecc_blocks_text_changelog612.txt"));
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(
      blocks[0].ecc_block_uncorrected,
      (std::map<std::string, double>{
          {"GFX", 0}, {"HDP", 0}, {"MMHUB", 0}, {"PCIE_BIF", 0}, {"SDMA", 0}, {"UMC", 0}, {"XGMI_WAFL", 0}}));
  EXPECT_FALSE(blocks[0].ecc_uncorrected) << "no totals in --ecc-block alone";
}

TEST(AmdSmiRecorded, BadPagesNoneFound) {
  const auto b = cvs::parse_amd_smi_bad_pages(amd("amd_smi_bad_pages_none_mi300x_rocmblog.txt"));
  ASSERT_EQ(b.size(), 2u);
  for (const auto& g : b) {
    EXPECT_EQ(*g.retired, 0);
    EXPECT_EQ(*g.pending, 0);
    EXPECT_EQ(*g.unreservable, 0);
  }
}

// The views amd-smi prints for people, which the sampler does not read: the stand-in amd-smi
// (tests/data/telemetry/stand_in/amd_table.py) is shaped on them: its healthy 8x MI300X node has
// these addresses and 750 W caps, its idle GPUs these figures.
TEST(AmdSmiRecorded, TheHumanViewsShapeTheStandInsMi300xNode) {
  const auto view = amd("amd_smi_default_view_8x_mi300x_changelog70.txt");
  const std::regex row(
      R"(\| ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9]) +AMD Instinct MI300X \|.* (\d+)/(\d+) W \|)");
  std::vector<std::string> bdfs;
  for (auto it = std::sregex_iterator(view.begin(), view.end(), row); it != std::sregex_iterator(); ++it) {
    bdfs.push_back((*it)[1].str());
    EXPECT_EQ((*it)[3].str(), "750");
  }
  EXPECT_EQ(bdfs, (std::vector<std::string>{"0000:0c:00.0", "0000:22:00.0", "0000:38:00.0", "0000:5c:00.0",
                                            "0000:9f:00.0", "0000:af:00.0", "0000:bf:00.0", "0000:df:00.0"}));
  EXPECT_NE(amd("amd_smi_monitor_p_pwr_cap_changelog70.txt").find("148 W    750 W"), std::string::npos);
  // An idle MI300X (monitor -putm, GPU 2): 117 W, 41 C, 0 % gfx, 120 MHz, memory at 900 MHz.
  EXPECT_NE(amd("amd_smi_monitor_putm_mi300x_rocmblog.txt")
                .find("2  117 W     41 °C     40 °C       0 %    120 MHz       0 %    900 MHz"),
            std::string::npos);
}

// What is not an answer of GPUs is said, never taken for one.
TEST(AmdSmiRecorded, AnswersWithoutGpusAreRefusedInWords) {
  try {
    cvs::amd_smi_gpus(amd("amd_smi_ras_cper_changelog641.txt"));
    ADD_FAILURE() << "a CPER dump read as GPUs";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU"), std::string::npos) << e.what();
  }
  // rocm-smi --showrasinfo has no JSON: the sampler's parser notes it, it never throws.
  cvs::TelemetryParser p;
  p.feed("H tick=100 cores=4 tool=rocm-smi\nS 10 cpu=1 psi_cpu=0 psi_mem=0 psi_io=0 mem_kb=1 steps=1\n");
  for (const auto& l : std::vector<std::string>{"WARNING: No JSON data to report"}) p.feed("J " + l + "\n");
  p.feed("E\nF\n");
  ASSERT_EQ(p.notes().size(), 1u);
  EXPECT_NE(p.notes()[0].find("rocm-smi output does not parse"), std::string::npos) << p.notes()[0];
  EXPECT_NE(
      amd("rocm_smi_json_showrasinfo_no_data_mi300a_issue4374.txt").find("WARNING: No JSON data to report"),
      std::string::npos);
}
