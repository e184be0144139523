// Model-verification cards from a session's results.json, in the schema of the
// Megatron-Bridge verification cards (shared/spec/megatron-bridge-model-verification-cards.json):
// one pretrain_performance entry per sweep, one checkpoint_resume entry when it ran.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace cvs {

struct Results;  // results_file.hpp

// `today` is the last_verified date (YYYY-MM-DD) written on verified entries.
nlohmann::ordered_json make_card(const Results& results, const std::string& today);

}  // namespace cvs
