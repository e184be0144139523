// Sweep keys: "BS=3,PRECISION=FP8,SL=8192" -> maxtext_config overrides, and the reversible
// mapping between a sweep key and a gtest-safe parameter name.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/catalog/gpu_catalog.hpp"

namespace cvs {

enum class Precision { BF16, FP8 };
std::string to_string(Precision p);

struct SweepKey {
  std::string text;  // the key exactly as written (also the threshold cell key)
  std::optional<nlohmann::ordered_json> batch_size;  // BS: number (int when integral)
  std::optional<Precision> precision;                // PRECISION
  std::optional<long long> seq_len;                  // SL
};

// Parses a sweep key. Unknown tokens, duplicates, bad numbers and empty tokens raise one
// ConfigError listing every problem, each at `pointer` in `file`.
SweepKey parse_sweep_key(const std::string& key, const std::string& file, const std::string& pointer);

// fp8_flavor and known_gpu_name (the FP8 rule of a gpu_name) are the GPU catalog's.

// The maxtext_config overrides a parsed key stands for (BS -> per_device_batch_size,
// PRECISION -> quantization, SL -> max_target_length). Throws ConfigError when FP8 is asked
// for on a GPU without an FP8 flavor.
nlohmann::ordered_json key_overrides(const SweepKey& key, const std::string& gpu_name,
                                     const std::string& file, const std::string& pointer);

// MaxText's logged "Config param quantization: QuantizationType.NANOO_FP8" (0.2.x) or a raw
// "nanoo_fp8" (older) -> the config value ("" for none), to check that a precision really applied.
std::string normalize_quantization(const std::string& logged);

// "BS=3,PRECISION=BF16,SL=8192" <-> "BS_3__PRECISION_BF16__SL_8192" ('.' in a value -> 'p').
// Only letters, digits and '_' appear in the name, as gtest requires.
std::string sweep_test_name(const std::string& key);
std::string sweep_key_from_test_name(const std::string& name);

}  // namespace cvs
