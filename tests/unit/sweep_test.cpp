#include <gtest/gtest.h>

#include "cvs/config/config_error.hpp"
#include "cvs/config/sweep.hpp"

using cvs::parse_sweep_key;

TEST(Sweep, ParsesTheThreeTokens) {
  auto k = parse_sweep_key("BS=3,PRECISION=FP8,SL=8192", "f.json", "/sweeps/x");
  EXPECT_EQ(*k.batch_size, 3);
  EXPECT_TRUE(k.batch_size->is_number_integer());
  EXPECT_EQ(*k.precision, cvs::Precision::FP8);
  EXPECT_EQ(*k.seq_len, 8192);
}

TEST(Sweep, Fp8FlavorFollowsGpuName) {
  auto k = parse_sweep_key("BS=3,PRECISION=FP8,SL=8192", "f", "/p");
  EXPECT_EQ(cvs::key_overrides(k, "mi300x", "f", "/p")["quantization"], "nanoo_fp8");
  EXPECT_EQ(cvs::key_overrides(k, "mi325x", "f", "/p")["quantization"], "nanoo_fp8");
  EXPECT_EQ(cvs::key_overrides(k, "mi3xx", "f", "/p")["quantization"], "nanoo_fp8");
  EXPECT_EQ(cvs::key_overrides(k, "mi35x", "f", "/p")["quantization"], "fp8");
  EXPECT_EQ(cvs::key_overrides(k, "mi355x", "f", "/p")["quantization"], "fp8");
  EXPECT_EQ(cvs::key_overrides(k, "h100", "f", "/p")["quantization"], "fp8");
  EXPECT_THROW(cvs::key_overrides(k, "cpu", "f", "/p"), cvs::ConfigError);
}

TEST(Sweep, Bf16MapsToEmptyQuantization) {
  auto o = cvs::key_overrides(parse_sweep_key("BS=2,PRECISION=BF16,SL=128", "f", "/p"), "cpu", "f", "/p");
  EXPECT_EQ(o["quantization"], "");
  EXPECT_EQ(o["per_device_batch_size"], 2);
  EXPECT_EQ(o["max_target_length"], 128);
}

TEST(Sweep, FractionalBatchStaysAFloat) {
  auto k = parse_sweep_key("BS=0.5", "f", "/p");
  EXPECT_TRUE(k.batch_size->is_number_float());
  EXPECT_DOUBLE_EQ(k.batch_size->get<double>(), 0.5);
}

struct BadKey {
  const char* key;
  const char* needle;
};
void PrintTo(const BadKey& k, std::ostream* os) {
  *os << '"' << k.key << '"';
}
class SweepBadKey : public ::testing::TestWithParam<BadKey> {};
TEST_P(SweepBadKey, IsAConfigErrorAtThePointer) {
  try {
    parse_sweep_key(GetParam().key, "cfg.json", "/sweeps/k");
    FAIL() << "expected a ConfigError for " << GetParam().key;
  } catch (const cvs::ConfigError& e) {
    ASSERT_FALSE(e.issues().empty());
    EXPECT_EQ(e.issues()[0].pointer, "/sweeps/k");
    EXPECT_EQ(e.issues()[0].file, "cfg.json");
    EXPECT_NE(std::string(e.what()).find(GetParam().needle), std::string::npos) << e.what();
  }
}
INSTANTIATE_TEST_SUITE_P(
    Rules, SweepBadKey,
    ::testing::Values(BadKey{"BS=3,TP=8", "unknown token 'TP'"}, BadKey{"BS=3,BS=4", "twice"},
                      BadKey{"BS=x", "not a positive number"}, BadKey{"BS=-1", "not a positive"},
                      BadKey{"SL=1.5", "not a positive integer"}, BadKey{"PRECISION=FP16", "not BF16 or FP8"},
                      BadKey{"BS=3,,SL=1", "malformed"}, BadKey{"", "empty"}, BadKey{"BS", "malformed"}));

TEST(Sweep, TestNameIsGtestSafeAndReversible) {
  for (std::string key : {"BS=3,PRECISION=BF16,SL=8192", "BS=0.5,PRECISION=FP8", "SL=128", "BS=12,SL=4096"}) {
    const auto name = cvs::sweep_test_name(key);
    for (char c : name) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << name;
    EXPECT_EQ(cvs::sweep_key_from_test_name(name), key);
  }
  EXPECT_EQ(cvs::sweep_test_name("BS=3,PRECISION=BF16,SL=8192"), "BS_3__PRECISION_BF16__SL_8192");
}

TEST(Sweep, LoggedQuantizationNormalizes) {
  EXPECT_EQ(cvs::normalize_quantization("QuantizationType.NONE"), "");
  EXPECT_EQ(cvs::normalize_quantization("QuantizationType.NANOO_FP8"), "nanoo_fp8");
  EXPECT_EQ(cvs::normalize_quantization("QuantizationType.FP8"), "fp8");
  EXPECT_EQ(cvs::normalize_quantization("nanoo_fp8"), "nanoo_fp8");
}

TEST(SweepKey, Fp8FlavorFollowsTheSpecRuleCaseInsensitively) {
  using cvs::fp8_flavor;
  EXPECT_EQ(fp8_flavor("mi355x"), "fp8");
  EXPECT_EQ(fp8_flavor("MI350X"), "fp8");
  EXPECT_EQ(fp8_flavor("MI300X"), "nanoo_fp8") << "rejected before: upper case";
  EXPECT_EQ(fp8_flavor("mi325x"), "nanoo_fp8");
  EXPECT_EQ(fp8_flavor("H200"), "fp8");
  EXPECT_EQ(fp8_flavor("gb200-nvl72"), "fp8");
  EXPECT_EQ(fp8_flavor("mi400x"), "nanoo_fp8") << "unknown: the spec's else branch, with a warning";
  EXPECT_FALSE(cvs::known_gpu_name("mi400x"));
  EXPECT_TRUE(cvs::known_gpu_name("MI300X"));
  EXPECT_FALSE(fp8_flavor("cpu"));
  auto k = cvs::parse_sweep_key("BS=1,PRECISION=FP8", "f.json", "/sweeps/x");
  EXPECT_EQ(cvs::key_overrides(k, "MI300X", "f.json", "/sweeps/x")["quantization"], "nanoo_fp8");
  EXPECT_THROW(cvs::key_overrides(k, "cpu", "f.json", "/sweeps/x"), cvs::ConfigError);
}
