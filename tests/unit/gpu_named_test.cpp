// The bad GPU inside a node, named: a stand-in nvidia-smi of 8 H100s answering the sampler's own
// --query-gpu field list from a table (tests/data/telemetry/stand_in/table.py: a double at the
// vendor tool's process boundary, no GPU here), one GPU faulted per case. Its rows go through the
// sampler's line format, the parser and the summary; the words on a failing gate
// (explain_telemetry) and the run's notes (telemetry_defects) must name GPU 5 and no other, and a
// healthy table whose idle samples show the links at gen 1 must give none.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cvs/html_report.hpp"
#include "cvs/logs/telemetry.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"
#include "cvs/results/telemetry_record.hpp"
#include "test_helpers.hpp"

using nlohmann::json;

namespace {

// The field lists the sampler itself asks nvidia-smi for (lib/cvs/exec/agent/telemetry.sh).
std::string sampler_query(const char* kind) {
  const auto text = cvs::test::read_file(std::string(CVS_SOURCE_ROOT) + "/lib/cvs/exec/agent/telemetry.sh");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(std::string("--") + kind + "=([a-z_.,]+)"))) << kind;
  return m.size() > 1 ? m[1].str() : "";
}

// 8 healthy H100s: at load 1980 MHz, 690 W of 700 W, PCIe x16 gen 5; idle: the links at gen 1, the
// clocks parked.
json healthy_table() {
  json t;
  t["idle"] = {{"power.draw", 70},
               {"clocks.sm", 345},
               {"clocks.mem", 2619},
               {"temperature.gpu", 31},
               {"temperature.memory", 29},
               {"utilization.gpu", 0},
               {"clocks_event_reasons.active", "0x0000000000000001"},
               {"pcie.link.gen.current", 1},
               {"pcie.link.width.current", 16}};
  t["load"] = {{"power.draw", 690},
               {"clocks.sm", 1980},
               {"clocks.mem", 2619},
               {"temperature.gpu", 62},
               {"temperature.memory", 58},
               {"utilization.gpu", 100},
               {"clocks_event_reasons.active", "0x0000000000000000"},
               {"pcie.link.gen.current", 5},
               {"pcie.link.width.current", 16}};
  const char* bus[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  for (int i = 0; i < 8; ++i)
    t["gpus"].push_back({{"ecc.errors.corrected.volatile.total", 0},
                         {"ecc.errors.uncorrected.volatile.total", 0},
                         {"pcie.link.width.max", 16},
                         {"pcie.link.gen.max", 5},
                         {"enforced.power.limit", 700},
                         {"power.default_limit", 700},
                         {"uuid", "GPU-0000000" + std::to_string(i)},
                         {"pci.bus_id", std::string("00000000:") + bus[i] + ":00.0"},
                         {"retired_pages.pending", "No"},
                         {"remapped_rows.pending", 0},
                         {"remapped_rows.failure", 0}});
  return t;
}

// One call of the stand-in, as the sampler makes it, with its rows prefixed as the sampler does.
std::string ask(const std::filesystem::path& table, const char* phase, const char* kind, const char* prefix) {
  const auto p = cvs::test::run_command(std::string("CVS_STAND_IN_TABLE=") + table.string() +
                                        " CVS_STAND_IN_PHASE=" + phase + " python3 " + CVS_SOURCE_ROOT +
                                        "/tests/data/telemetry/stand_in/table.py --" + kind + "=" +
                                        sampler_query(kind) + " --format=csv,noheader,nounits");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  std::string out;
  for (std::size_t at = 0; at < p.out.size();) {
    const auto nl = p.out.find('\n', at);
    out += prefix + p.out.substr(at, nl - at) + "\n";
    at = nl == std::string::npos ? p.out.size() : nl + 1;
  }
  return out;
}

// A run on node n3: two samples while the GPUs idle (import, compile), four under load, and the
// kernel line, if any, in the third.
cvs::NodeTelemetry run_on(const json& table, const std::string& kernel_line = "") {
  const auto path =
      std::filesystem::temp_directory_path() / ("cvs_gpu_table_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << table.dump();
  std::string s = "H tick=100 cores=16 tool=nvidia-smi sid=42\nV NVIDIA-SMI 550.54.15 (stand-in table)\n";
  for (int i = 0; i < 6; ++i) {
    const bool load = i >= 2;
    s += "S " + std::to_string(100 + 5 * i) + " cpu=" + std::to_string(1000 + 500 * i) +
         " psi_cpu=0 psi_mem=0 psi_io=0 mem_kb=16000000 steps=" + (load ? "1" : "0") + "\n";
    s += ask(path, load ? "load" : "idle", "query-gpu", "G ");
    s += ask(path, load ? "load" : "idle", "query-remapped-rows", "R ");
    if (i == 3 && !kernel_line.empty()) s += "K 3,1201,105000000,-;" + kernel_line + "\n";
  }
  s += "F\n";
  std::filesystem::remove(path);
  cvs::TelemetryParser p;
  p.feed(s);
  return cvs::summarize_telemetry("n3", p);
}

using cvs::test::joined;
using cvs::test::names_only_gpu5;

}  // namespace

TEST(GpuNamed, AHealthyTableWhoseIdleLinksShowGen1GivesNoWords) {
  const auto t = run_on(healthy_table());
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_EQ(t.gpus[5].bus_id, "0000:ab:00") << "the domain kept (#55)";
  EXPECT_EQ(*t.gpus[5].pcie_gen_min, 5.0) << "the link under load, not the idle gen 1";
  EXPECT_EQ(cvs::explain_telemetry(t), "");
  EXPECT_TRUE(cvs::telemetry_defects(t).empty()) << joined(cvs::telemetry_defects(t));
}

TEST(GpuNamed, EachFaultOfGpu5IsNamedOnTheFailingGateAndADefectInTheNotes) {
  struct Case {
    const char* name;
    json gpu5;                // GPU 5's fields
    const char* words;        // in explain_telemetry
    bool defect;              // in telemetry_defects too (a defect that may not have cost speed yet)
    std::string kernel = "";  // a kernel line of the run
  };
  const std::vector<Case> cases = {
      {"lowered power limit",
       {{"enforced.power.limit", 450},
        {"phase", {{"load", {{"power.draw", 448}, {"clocks_event_reasons.active", "0x4"}}}}}},
       "GPU 5 power limit lowered to 450 W (default 700 W)",
       true},
      {"PCIe x8 gen 3 under load",
       {{"phase", {{"load", {{"pcie.link.width.current", 8}, {"pcie.link.gen.current", 3}}}}}},
       "GPU 5 PCIe link under load at x8 gen 3 (capable of x16 gen 5)",
       true},
      {"clock 30 % down, thermal",
       {{"phase",
         {{"load",
           {{"clocks.sm", 1386}, {"temperature.gpu", 91}, {"clocks_event_reasons.active", "0x40"}}}}}},
       "GPU 5 slowed (thermal (hardware)) in 100 % of samples, 91 C, clock 1386-1386 MHz",
       false},
      {"pending row remaps",
       {{"remapped_rows.pending", 1}},
       "GPU 5 has row remaps pending (a GPU reset applies them)",
       true},
      {"an Xid on GPU 5's bus", json::object(), "GPU 5: kernel: NVIDIA Xid 79", false,
       "NVRM: Xid (PCI:0000:ab:00): 79, pid=2471, name=python3, GPU has fallen off the bus."},
  };
  for (const auto& c : cases) {
    auto table = healthy_table();
    table["gpus"][5].update(c.gpu5);
    const auto t = run_on(table, c.kernel);
    const auto why = cvs::explain_telemetry(t);
    EXPECT_NE(why.find(c.words), std::string::npos) << c.name << ": " << why;
    names_only_gpu5(why, c.name);
    const auto defects = joined(cvs::telemetry_defects(t));
    if (c.defect) {
      EXPECT_NE(defects.find(c.words), std::string::npos) << c.name << ": " << defects;
      names_only_gpu5(defects, c.name);
    } else {
      EXPECT_EQ(defects, "") << c.name;
    }
  }
}

// The report shows each node's GPUs as a table, the GPU the words name marked (a real session's
// results.json with the stand-in's telemetry of a PCIe-faulted GPU 5 put on its node).
TEST(GpuNamed, TheReportTablesTheGpusAndMarksTheOneNamed) {
  auto table = healthy_table();
  table["gpus"][5]["phase"] = {{"load", {{"pcie.link.width.current", 8}, {"pcie.link.gen.current", 3}}}};
  auto r = cvs::results_from_json(cvs::test::read_json(cvs::test::data("results/cpu_single_results.json")));
  auto& sweep = r.sweeps.begin()->second;
  ASSERT_FALSE(sweep.run.nodes.empty());
  sweep.run.nodes[0].telemetry = run_on(table);
  const auto html = cvs::report::render_html(r);
  EXPECT_NE(html.find("<th>PCIe under load (capable)</th>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"named\"><td>5</td>"), std::string::npos) << "GPU 5's row is marked";
  EXPECT_EQ(html.find("<tr class=\"named\"><td>4</td>"), std::string::npos);
  EXPECT_NE(html.find("x8 gen 3 (x16 gen 5)"), std::string::npos);
  EXPECT_NE(html.find("x16 gen 5 (x16 gen 5)"), std::string::npos) << "the healthy GPUs' link under load";
}
