// The mesh MaxText will build, checked before launch (lib/cvs/config/mesh.hpp).
#include <gtest/gtest.h>

#include <fstream>

#include "cvs/config/config.hpp"
#include "cvs/config/mesh.hpp"
#include "test_helpers.hpp"

using cvs::test::run_command;
using nlohmann::ordered_json;

namespace {

ordered_json shipped(const std::string& name) {
  std::ifstream in(std::string(CVS_SOURCE_ROOT) + "/configs/" + name);
  return ordered_json::parse(in);
}

cvs::SuiteConfig load(const ordered_json& j) {
  return cvs::load_config_text(j.dump(), std::string(CVS_SOURCE_ROOT) + "/configs/mesh_case.json",
                               {.user = "u", .require_threshold_file = false});
}

// Every "<changeme>" tag dropped, as a site fills the values in.
void untag(ordered_json& j) {
  if (j.is_string()) {
    auto t = j.get<std::string>();
    if (auto at = t.find(" <changeme>"); at != std::string::npos) j = t.erase(at, 11);
  } else if (j.is_structured()) {
    for (auto& v : j) untag(v);
  }
}

std::string issues_text(const std::vector<cvs::ConfigIssue>& v) {
  std::string t;
  for (const auto& i : v) t += i.to_string() + "\n";
  return t;
}

}  // namespace

TEST(Mesh, TheShippedMultiDeviceConfigsFitTheirDevices) {
  const auto four = load(shipped("cpu_jaxmaxtext_tiny_4dev_single.json"));
  const auto c4 = cvs::check_mesh(four, four.runs.front(), 1);
  EXPECT_TRUE(c4.issues.empty()) << issues_text(c4.issues);
  EXPECT_EQ(c4.plan.describe(), "ici fsdp 4 over 4 device(s) a slice; dcn 1 over 1 slice(s)");
  // JAX's CPU backend is one slice: two processes of two devices are one ici mesh of 4.
  const auto two = load(shipped("cpu_jaxmaxtext_tiny_2x2_distributed.json"));
  const auto c22 = cvs::check_mesh(two, two.runs.front(), 2);
  EXPECT_TRUE(c22.issues.empty()) << issues_text(c22.issues);
  EXPECT_EQ(c22.plan.describe(), "ici fsdp 4 over 4 device(s) a slice; dcn 1 over 1 slice(s)");
  // On GPUs a node is a slice: 8 GPUs within, the nodes across.
  for (const char* name :
       {"mi3xx_jaxmaxtext_llama-3.1-70b_distributed.json", "h100_jaxmaxtext_llama-3.1-8b_single.json",
        "mi3xx_jaxmaxtext_llama-3.1-8b_distributed.json"}) {
    auto j = shipped(name);
    untag(j);  // the shipped GPU configs' site values are tagged <changeme>: not what is checked here
    const auto c = load(j);
    const std::size_t nodes = c.mode == cvs::Mode::Distributed ? 4 : 1;
    for (const auto& run : c.runs) {
      const auto m = cvs::check_mesh(c, run, nodes);
      EXPECT_TRUE(m.issues.empty()) << name << " " << run << "\n" << issues_text(m.issues);
      EXPECT_EQ(m.plan.devices_per_slice, c.gpus_per_node) << name;
      EXPECT_EQ(m.plan.slices, static_cast<long long>(nodes)) << name;
    }
  }
}

TEST(Mesh, AMeshThatCannotFitNamesItsKeysTheProductTheDevicesAndTheFix) {
  auto j = shipped("cpu_jaxmaxtext_tiny_4dev_single.json");
  j["train_params"]["maxtext_config"]["ici_fsdp_parallelism"] = 8;
  const auto c = load(j);
  const auto m = cvs::check_mesh(c, c.runs.front(), 1);
  ASSERT_EQ(m.issues.size(), 1u);
  EXPECT_EQ(m.issues[0].pointer, "/train_params/maxtext_config/ici_fsdp_parallelism");
  EXPECT_NE(m.issues[0].message.find("ici_fsdp_parallelism 8 = 8"), std::string::npos) << m.issues[0].message;
  EXPECT_NE(m.issues[0].message.find("does not match the 4 devices"), std::string::npos)
      << m.issues[0].message;
  EXPECT_NE(m.issues[0].fix.find("multiply to 4"), std::string::npos) << m.issues[0].fix;
  // A sweep's own override is named where it is, and two -1 axes are refused as MaxText does.
  auto k = shipped("cpu_jaxmaxtext_tiny_4dev_single.json");
  k["sweeps"]["BS=4,PRECISION=BF16,SL=128"]["ici_tensor_parallelism"] = 3;
  k["train_params"]["maxtext_config"]["ici_data_parallelism"] = -1;
  const auto c2 = load(k);
  const auto two = cvs::check_mesh(c2, "BS=2,PRECISION=BF16,SL=128", 1);
  ASSERT_EQ(two.issues.size(), 1u);
  EXPECT_NE(two.issues[0].message.find("more than one ici axis is -1"), std::string::npos)
      << two.issues[0].message;
  EXPECT_THROW(cvs::require_meshes_fit(c2, 1), cvs::ConfigError);
}

// Before anything starts: cvs config validate and the suite both exit 2 with the keys named.
TEST(Mesh, ABadMeshExits2BeforeLaunch) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_mesh_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto j = shipped("cpu_jaxmaxtext_tiny_4dev_single.json");
  j["train_params"]["maxtext_config"]["ici_tensor_parallelism"] = 3;
  j["threshold_json"] =
      std::string(CVS_SOURCE_ROOT) + "/thresholds/cpu_jaxmaxtext_tiny_4dev_single_threshold.json";
  std::ofstream(dir / "bad.json") << j.dump(2);
  auto v = run_command(std::string(CVS_BINARY) + " config validate " + (dir / "bad.json").string());
  EXPECT_EQ(v.exit_code, 2) << v.out;
  EXPECT_NE(v.out.find("ici_tensor_parallelism 3"), std::string::npos) << v.out;
  auto s = run_command(std::string(CVS_SUITE_SINGLE) + " --config " + (dir / "bad.json").string() +
                       " --output " + (dir / "out").string());
  EXPECT_EQ(s.exit_code, 2) << s.out;
  EXPECT_NE(s.out.find("/train_params/maxtext_config/ici_tensor_parallelism"), std::string::npos) << s.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "runs")) << "nothing ran";
  std::filesystem::remove_all(dir);
}
