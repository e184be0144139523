#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "cvs/config/maxtext_yaml.hpp"
#include "test_helpers.hpp"

using nlohmann::ordered_json;

TEST(MaxtextYaml, SweepOverridesWinOverKeyAndBase) {
  auto j = cvs::test::spec_example_untagged();
  j["sweeps"]["BS=3,PRECISION=FP8,SL=8192"]["steps"] = 300;
  j["sweeps"]["BS=3,PRECISION=FP8,SL=8192"]["per_device_batch_size"] = 2;
  auto c = cvs::test::load_json(j);
  auto m = cvs::sweep_maxtext_config(c, "BS=3,PRECISION=FP8,SL=8192", "run-1", "/out");
  EXPECT_EQ(m["quantization"], "nanoo_fp8");
  EXPECT_EQ(m["per_device_batch_size"], 2) << "the sweep's own {} wins over the parsed key";
  EXPECT_EQ(m["steps"], 300);
  EXPECT_EQ(m["max_target_length"], 8192);
  EXPECT_EQ(m["run_name"], "run-1");
  EXPECT_EQ(m["base_output_directory"], "/out");
  EXPECT_EQ(m["model_name"], "llama3.3-70b");
}

TEST(MaxtextYaml, TypesSurviveTheRoundTrip) {
  ordered_json m = {{"quantization", ""},
                    {"scan_layers", true},
                    {"steps", 30},
                    {"learning_rate", 1e-05},
                    {"mem_fraction", 0.97},
                    {"truthy_string", "true"},
                    {"number_string", "123"},
                    {"dcn_data_parallelism", -1},
                    {"rules", {1, 2}},
                    {"ratio", 2.0}};
  YAML::Node n = YAML::Load(cvs::to_maxtext_yaml(m));
  EXPECT_EQ(n["quantization"].as<std::string>(), "");
  EXPECT_EQ(n["quantization"].Tag(), "!");  // double-quoted: a string, never null
  EXPECT_TRUE(n["scan_layers"].as<bool>());
  EXPECT_EQ(n["steps"].as<int>(), 30);
  EXPECT_EQ(n["truthy_string"].Tag(), "!");
  EXPECT_EQ(n["number_string"].Tag(), "!");
  EXPECT_EQ(n["dcn_data_parallelism"].as<int>(), -1);
  EXPECT_DOUBLE_EQ(n["mem_fraction"].as<double>(), 0.97);
  EXPECT_EQ(n["rules"].size(), 2u);
  // YAML 1.1 loaders (PyYAML) read "1e-05" as a string: floats carry a '.' in the mantissa.
  EXPECT_EQ(n["learning_rate"].Scalar(), "1.0e-05");
  EXPECT_EQ(n["ratio"].Scalar(), "2.0");
}

TEST(MaxtextYaml, XlaFlagsJoinedAndEmptyMapOmitted) {
  cvs::TrainParams tp;
  EXPECT_FALSE(cvs::xla_flags_value(tp).has_value());
  tp.xla_flags = {{"xla_gpu_autotune_level", "0"}, {"xla_gpu_enable_latency_hiding_scheduler", "true"}};
  EXPECT_EQ(*cvs::xla_flags_value(tp),
            "--xla_gpu_autotune_level=0 --xla_gpu_enable_latency_hiding_scheduler=true");
}

TEST(MaxtextYaml, SmokeRunIsBf16AtTheSmokeShape) {
  auto c = cvs::test::load_json(cvs::test::spec_example_untagged());
  auto m = cvs::smoke_maxtext_config(c, "smoke", "/o");
  EXPECT_EQ(m["quantization"], "");
  EXPECT_EQ(m["steps"], 5);
  EXPECT_EQ(m["per_device_batch_size"], 1);
  EXPECT_EQ(m["max_target_length"], 2048);
}
