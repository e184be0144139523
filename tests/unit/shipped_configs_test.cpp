// Every shipped config and threshold file: tagged exactly where the spec tags them, loading
// cleanly once the tags are replaced, a threshold cell for every run, and the `cvs config`
// listing/copy commands over them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "cvs/config/config.hpp"
#include "cvs/config/sweep.hpp"
#include "cvs/config/thresholds.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

const fs::path kConfigs = fs::path(CVS_SOURCE_ROOT) / "configs";
const fs::path kThresholds = fs::path(CVS_SOURCE_ROOT) / "thresholds";

std::vector<fs::path> shipped() {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(kConfigs))
    if (e.is_regular_file() && e.path().extension() == ".json") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

// Pointers of string values holding <changeme>, except container.image (a preflight check).
void tags(const ordered_json& j, const std::string& ptr, std::vector<std::string>& out) {
  if (j.is_string() && j.get<std::string>().find("<changeme>") != std::string::npos &&
      ptr != "/container/image")
    out.push_back(ptr);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key()[0] != '_') tags(it.value(), cvs::pointer_join(ptr, it.key()), out);
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) tags(j[i], cvs::pointer_join(ptr, i), out);
}

void untag(ordered_json& j) {
  if (j.is_string()) {
    auto s = j.get<std::string>();
    if (auto p = s.find(" <changeme>"); p != std::string::npos) j = s.substr(0, p);
  }
  if (j.is_object() || j.is_array())
    for (auto& v : j) untag(v);
}

std::vector<fs::path> threshold_files_for(const fs::path& config) {
  const std::string stem = config.stem().string();
  if (stem.rfind("mi3xx_", 0) == 0) {
    const std::string rest = stem.substr(6);
    return {kThresholds / ("mi300x_" + rest + "_threshold.json"),
            kThresholds / ("mi325x_" + rest + "_threshold.json")};
  }
  return {kThresholds / (stem + "_threshold.json")};
}

}  // namespace

TEST(ShippedConfigs, TheSpecTableIsShippedPlusNvidiaAndCpu) {
  std::set<std::string> names;
  for (const auto& p : shipped()) names.insert(p.filename().string());
  for (const char* n :
       {"mi3xx_jaxmaxtext_llama-3.1-8b_distributed.json", "mi3xx_jaxmaxtext_llama-3.1-70b_single.json",
        "mi3xx_jaxmaxtext_llama-3.1-70b_distributed.json", "mi3xx_jaxmaxtext_llama-3.3-70b_single.json",
        "mi3xx_jaxmaxtext_llama-3.3-70b_distributed.json",
        "mi3xx_jaxmaxtext_deepseek-v2-lite_distributed.json",
        "mi3xx_jaxmaxtext_llama-3.1-405b_distributed.json",
        "mi3xx_jaxmaxtext_deepseek-v4-284b_distributed.json", "mi35x_jaxmaxtext_llama-3.1-70b_single.json",
        "h100_jaxmaxtext_llama-3.1-8b_single.json", "h100_jaxmaxtext_llama-3.1-70b_single.json",
        "h200_jaxmaxtext_llama-3.1-8b_single.json", "h200_jaxmaxtext_llama-3.1-70b_single.json",
        "cpu_jaxmaxtext_tiny_single.json", "cpu_jaxmaxtext_tiny_distributed.json"})
    EXPECT_TRUE(names.count(n)) << n;
}

TEST(ShippedConfigs, TaggedConfigsFailWithOnePointerPerTagAndLoadOnceReplaced) {
  for (const auto& path : shipped()) {
    SCOPED_TRACE(path.filename().string());
    const auto raw = cvs::test::read_json(path);
    std::vector<std::string> expected;
    tags(raw, "", expected);
    std::vector<cvs::ConfigIssue> issues;
    try {
      cvs::load_config(path, {.user = "ci"});
    } catch (const cvs::ConfigError& e) {
      issues = e.issues();
    }
    ASSERT_EQ(issues.size(), expected.size());
    for (const auto& ptr : expected) EXPECT_TRUE(cvs::test::has_issue(issues, ptr, "<changeme>"));
    // Once a user replaces the tags the config loads, in the mode its name says.
    auto fixed = raw;
    untag(fixed);
    auto c = cvs::load_config_text(fixed.dump(), path, {.user = "ci"});
    const bool distributed = path.stem().string().find("_distributed") != std::string::npos;
    EXPECT_EQ(c.mode, distributed ? cvs::Mode::Distributed : cvs::Mode::Single);
    EXPECT_TRUE(cvs::preflight(c).empty()) << "with the image untagged too, nothing stops a launch";
  }
}

TEST(ShippedConfigs, MiConfigsTagTheImageAndMi3xxTagsTheThresholdFile) {
  for (const auto& path : shipped()) {
    const auto raw = cvs::test::read_json(path);
    const auto stem = path.stem().string();
    if (stem.rfind("cpu_", 0) == 0) continue;
    EXPECT_NE(raw["container"]["image"].get<std::string>().find("<changeme>"), std::string::npos) << stem;
    EXPECT_EQ(raw["threshold_json"].get<std::string>().find("<changeme>") != std::string::npos,
              stem.rfind("mi3xx_", 0) == 0)
        << stem;
    const auto& env = raw["container"]["env"];
    const bool distributed = stem.find("_distributed") != std::string::npos;
    for (const char* v : {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_GID_INDEX"}) {
      EXPECT_EQ(env.contains(v), distributed) << stem << " " << v;
      if (distributed) {
        EXPECT_NE(env[v].get<std::string>().find(" <changeme>"), std::string::npos) << stem << " " << v;
      }
    }
    if (distributed) {
      const auto vols = raw["container"]["runtime"]["args"]["volumes"].dump();
      EXPECT_NE(vols.find("/dev/infiniband:/dev/infiniband"), std::string::npos) << stem;
      EXPECT_NE(vols.find("libibverbs:ro"), std::string::npos) << stem;
    }
  }
}

TEST(ShippedConfigs, EveryRunHasAThresholdCellInEveryPlatformFile) {
  for (const auto& path : shipped()) {
    const auto raw = cvs::test::read_json(path);
    for (const auto& tf_path : threshold_files_for(path)) {
      SCOPED_TRACE(tf_path.filename().string());
      ASSERT_TRUE(fs::exists(tf_path));
      auto tf = cvs::load_thresholds(tf_path);
      EXPECT_EQ(tf.comments.count("_node_count_comment"), 1u);
      for (const auto& run : raw["runs"]) EXPECT_NE(tf.cell(run.get<std::string>()), nullptr) << run;
    }
  }
}

TEST(ShippedConfigs, PrecisionsAttentionAndMoeFollowTheSpec) {
  auto load = [](const std::string& name) {
    auto raw = cvs::test::read_json(kConfigs / name);
    untag(raw);
    return cvs::load_config_text(raw.dump(), kConfigs / name, {.user = "ci"});
  };
  auto precisions = [](const cvs::SuiteConfig& c) {
    std::set<std::string> p;
    for (const auto& r : c.runs) p.insert(cvs::to_string(*c.sweep(r).parsed.precision));
    return p;
  };
  EXPECT_EQ(precisions(load("mi3xx_jaxmaxtext_deepseek-v2-lite_distributed.json")),
            std::set<std::string>{"BF16"});
  EXPECT_EQ(precisions(load("mi3xx_jaxmaxtext_deepseek-v4-284b_distributed.json")),
            std::set<std::string>{"BF16"});
  EXPECT_EQ(precisions(load("mi3xx_jaxmaxtext_llama-3.1-405b_distributed.json")),
            (std::set<std::string>{"BF16", "FP8"}));
  auto v4 = load("mi3xx_jaxmaxtext_deepseek-v4-284b_distributed.json");
  EXPECT_EQ(v4.train_params.maxtext_config["attention"], "dot_product");
  for (const char* k : {"sparse_matmul", "megablox", "capacity_factor"})
    EXPECT_TRUE(v4.train_params.maxtext_config.contains(k)) << k;
  auto l70 = load("mi3xx_jaxmaxtext_llama-3.3-70b_distributed.json");
  EXPECT_EQ(l70.runs,
            (std::vector<std::string>{"BS=3,PRECISION=BF16,SL=8192", "BS=3,PRECISION=FP8,SL=8192"}));
  EXPECT_EQ(l70.scaling_baseline.tokens_per_sec_total, 394000.0);
  auto fp8 = [&](const std::string& name) {
    auto c = load(name);
    for (const auto& r : c.runs)
      if (c.sweep(r).parsed.precision == cvs::Precision::FP8)
        return cvs::key_overrides(c.sweep(r).parsed, c.gpu_name, "", "")["quantization"].get<std::string>();
    return std::string();
  };
  EXPECT_EQ(fp8("mi3xx_jaxmaxtext_llama-3.1-70b_single.json"), "nanoo_fp8");
  EXPECT_EQ(fp8("mi35x_jaxmaxtext_llama-3.1-70b_single.json"), "fp8");
  EXPECT_EQ(fp8("h100_jaxmaxtext_llama-3.1-8b_single.json"), "fp8");
  EXPECT_EQ(load("h200_jaxmaxtext_llama-3.1-70b_single.json").train_params.maxtext_config["attention"],
            "cudnn_flash_te");
}

TEST(ShippedConfigs, TheSpecThresholdCellIsShippedVerbatim) {
  auto tf = cvs::load_thresholds(kThresholds / "mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json");
  auto spec = cvs::load_thresholds(
      cvs::test::data("configs/mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json"));
  const auto* a = tf.cell("BS=3,PRECISION=BF16,SL=8192");
  const auto* b = spec.cell("BS=3,PRECISION=BF16,SL=8192");
  ASSERT_TRUE(a && b);
  for (const auto& s : *b) {
    auto it =
        std::find_if(a->begin(), a->end(), [&](const cvs::ThresholdSpec& x) { return x.metric == s.metric; });
    ASSERT_NE(it, a->end()) << s.metric;
    EXPECT_EQ(it->kind, s.kind) << s.metric;
    EXPECT_EQ(it->value, s.value) << s.metric;
  }
}

TEST(ShippedConfigs, CvsConfigListShowsGpuModeAndPrecisions) {
  auto p = cvs::test::run_command(std::string(CVS_BINARY) + " config list");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  for (const auto& path : shipped())
    EXPECT_NE(p.out.find(path.filename().string()), std::string::npos) << path;
  EXPECT_TRUE(std::regex_search(
      p.out, std::regex("mi3xx_jaxmaxtext_deepseek-v4-284b_distributed\\.json +mi3xx +distributed +BF16 ")))
      << p.out;
  EXPECT_TRUE(std::regex_search(
      p.out, std::regex("mi35x_jaxmaxtext_llama-3\\.1-70b_single\\.json +mi35x +single +BF16,FP8 ")))
      << p.out;
}

TEST(ShippedConfigs, CvsConfigCopyWritesConfigAndThresholdsSideBySideAndNeverOverwrites) {
  auto dir = fs::temp_directory_path() / ("cvs_copy_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto p = cvs::test::run_command(std::string(CVS_BINARY) +
                                  " config copy mi3xx_jaxmaxtext_llama-3.1-70b_single " + dir.string());
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_TRUE(fs::exists(dir / "mi3xx_jaxmaxtext_llama-3.1-70b_single.json"));
  EXPECT_TRUE(fs::exists(dir / "mi300x_jaxmaxtext_llama-3.1-70b_single_threshold.json"));
  EXPECT_TRUE(fs::exists(dir / "mi325x_jaxmaxtext_llama-3.1-70b_single_threshold.json"));
  EXPECT_FALSE(fs::exists(dir / "mi325x_jaxmaxtext_llama-3.1-70b_distributed_threshold.json"));
  EXPECT_FALSE(fs::exists(dir / "mi35x_jaxmaxtext_llama-3.1-70b_single_threshold.json"))
      << "another GPU's threshold file of the same model is not one this config can use";
  EXPECT_FALSE(fs::exists(dir / "h100_jaxmaxtext_llama-3.1-70b_single_threshold.json"));
  // The copy validates as the shipped file does: tagged until the user edits it.
  auto v = cvs::test::run_command(std::string(CVS_BINARY) + " config validate " +
                                  (dir / "mi3xx_jaxmaxtext_llama-3.1-70b_single.json").string());
  EXPECT_EQ(v.exit_code, 2) << v.out;
  auto again = cvs::test::run_command(std::string(CVS_BINARY) +
                                      " config copy mi3xx_jaxmaxtext_llama-3.1-70b_single " + dir.string());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.out.find("not overwriting"), std::string::npos) << again.out;
  fs::remove_all(dir);
}

TEST(ShippedConfigs, DistributedConfigsUseTheSpecsParallelismAndTheSpecExampleItsContainerName) {
  for (const auto& f : shipped()) {
    const auto j = cvs::test::read_json(f);
    if (f.stem().string().find("_distributed") == std::string::npos || j.value("gpu_name", "") == "cpu")
      continue;
    const auto& mc = j["train_params"]["maxtext_config"];
    EXPECT_EQ(mc.value("dcn_data_parallelism", 0), -1)
        << f.filename() << ": the spec's dcn_data_parallelism: -1";
    EXPECT_FALSE(mc.contains("dcn_fsdp_parallelism")) << f.filename();
    EXPECT_EQ(mc.value("ici_fsdp_parallelism", 0), 8) << f.filename();
  }
  // The spec's example is the llama-3.3-70b distributed config, key for key where it gives one.
  const auto ours = cvs::test::read_json(kConfigs / "mi3xx_jaxmaxtext_llama-3.3-70b_distributed.json");
  EXPECT_EQ(ours["container"]["name"], "rocm-jaxmaxtext-llama3.3-70b");
}

TEST(ShippedConfigs, CvsConfigCopyTakesTheSpecsTrainingJaxmaxtextName) {
  auto dir = fs::temp_directory_path() / ("cvs_copy_spec_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto p = cvs::test::run_command(std::string(CVS_BINARY) +
                                  " config copy training/jaxmaxtext/mi35x_jaxmaxtext_llama-3.1-70b_single " +
                                  dir.string());
  ASSERT_EQ(p.exit_code, 0) << p.out;
  std::set<std::string> got;
  for (const auto& e : fs::directory_iterator(dir)) got.insert(e.path().filename().string());
  EXPECT_EQ(got, (std::set<std::string>{"mi35x_jaxmaxtext_llama-3.1-70b_single.json",
                                        "mi35x_jaxmaxtext_llama-3.1-70b_single_threshold.json"}));
  fs::remove_all(dir);
}
