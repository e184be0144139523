// The MaxText run YAML (merged maxtext_config, sweep overrides, injected keys) and XLA_FLAGS.
#pragma once

#include <optional>
#include <string>

#include "cvs/config/config.hpp"

namespace cvs {

// base maxtext_config <- the sweep key's overrides <- the sweep's own {} (wins) <- run_name and
// base_output_directory (injected by the driver).
OrderedJson sweep_maxtext_config(const SuiteConfig& cfg, const std::string& sweep_key,
                                 const std::string& run_name, const std::string& base_output_directory);

// The smoke run: base maxtext_config in BF16 with the smoke block's steps, batch and seqlen.
OrderedJson smoke_maxtext_config(const SuiteConfig& cfg, const std::string& run_name,
                                 const std::string& base_output_directory);

// YAML text with types preserved: strings always double-quoted (so "" and "true" stay strings),
// integers as integers, floats always carry a '.', booleans as true/false.
std::string to_maxtext_yaml(const OrderedJson& maxtext_config);

// "--k=v --k2=v2" from train_params.xla_flags; nullopt for an empty map (XLA_FLAGS not set).
std::optional<std::string> xla_flags_value(const TrainParams& tp);

}  // namespace cvs
