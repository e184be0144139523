#include "cvs/card.hpp"

#include "cvs/format.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace cvs {
namespace {

using J = nlohmann::ordered_json;

J metric_or_null(const J& metrics, const char* k) {
  return metrics.contains(k) && metrics[k].is_number() ? metrics[k] : J(nullptr);
}

std::string fmt(double v) {
  return short_number(v);
}

std::string slugify(std::string s) {
  for (auto& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '-';
  }
  return s;
}

// The stages of one sweep: its training run and metric tests.
std::vector<J> stages_of(const J& results, const std::string& test_name) {
  std::vector<J> v;
  for (const auto& st : results["stages"]) {
    const auto t = st.value("test", std::string());
    const auto pos = t.find(test_name);
    if (pos == std::string::npos) continue;
    const auto end = pos + test_name.size();
    if (end == t.size() || t.compare(end, 2, "__") == 0) v.push_back(st);  // "<sweep>" or "<sweep>__<metric>"
  }
  return v;
}

J topology(const J& results, const J& sweep) {
  J t = J::object();
  const int nodes = sweep.value("num_nodes", 1),
            gpn = sweep.value("gpus_per_node", results["config"].value("gpus_per_node", 1));
  t["gpus_per_node"] = std::to_string(gpn);
  t["nodes"] = std::to_string(nodes);
  const auto& par = sweep.value("parallelism", J::object());
  // The cards' topology keys from MaxText's mesh: each is ici_X x dcn_X (a -1 "fill the rest"
  // axis or an absent one counts 1). MaxText's own keys stay beside them.
  for (const auto& [card_key, axis] :
       {std::pair{"tensor_parallel", "tensor"}, std::pair{"pipeline_parallel", "pipeline"},
        std::pair{"context_parallel", "context"}, std::pair{"expert_parallel", "expert"}}) {
    long long product = 1;
    for (const char* level : {"ici_", "dcn_"}) {
      const auto it = par.find(std::string(level) + axis + "_parallelism");
      if (it != par.end() && it->is_number_integer() && it->get<long long>() > 0)
        product *= it->get<long long>();
    }
    t[card_key] = std::to_string(product);
  }
  for (auto it = par.begin(); it != par.end(); ++it) t[it.key()] = it.value().dump();
  t["sequence_length"] =
      sweep.value("effective_config", J::object()).value("max_target_length", std::string());
  t["total_gpus"] = nodes * gpn;
  return t;
}

}  // namespace

namespace {

// What every entry of one results.json shares.
struct CardContext {
  const J& results;
  const J& cfg;
  std::string model, hardware, maxtext, today;
};

// The entry of one sweep: verified when it completed, no gate failed or went undecided, and at
// least one gate passed.
J sweep_entry(const CardContext& x, const std::string& key, const J& s) {
  const auto& [results, cfg, model, hardware, maxtext, today] = x;
  const auto& m = s.value("metrics", J::object());
  const auto stages = stages_of(results, s.value("test_name", std::string("?")));
  int fails = 0, passes = 0;
  std::string gates;
  for (const auto& st : stages) {
    const auto outcome = st.value("outcome", std::string());
    // A gate without evidence (INCONCLUSIVE) or a stage the infrastructure kept from deciding
    // (ERROR) verifies nothing, whatever on_inconclusive made of it.
    fails += outcome == "FAIL" || outcome == "INCONCLUSIVE" || outcome == "ERROR";
    const auto& p = st.value("properties", J::object());
    if (!p.contains("metric") || (outcome != "PASS" && outcome != "FAIL" && outcome != "INCONCLUSIVE"))
      continue;
    passes += outcome == "PASS";
    gates += (gates.empty() ? "" : "; ") + p.value("metric", std::string()) + " " +
             p.value("value", std::string()) + " " + p.value("threshold_kind", std::string("")) + " " +
             p.value("threshold_value", std::string("")) + " " + outcome;
  }
  const bool completed = s.value("status", std::string()) == "COMPLETED";
  const bool verified = completed && fails == 0 && passes > 0;
  std::string expected = "On " + std::to_string(s.value("num_nodes", 1)) + " node(s) x " +
                         std::to_string(s.value("gpus_per_node", 1)) + " " + hardware + " device(s), the " +
                         std::to_string(s.value("steps", 0)) + "-step " +
                         s.value("precision", std::string("bf16")) + " MaxText " + maxtext + " run of " +
                         model + " (" + key + ") " + (completed ? "completed" : "did not complete") + ".";
  if (m.contains("last_10_steps_step_time_ms_avg"))
    expected += " The last 10 steady-state steps averaged " +
                fmt(m["last_10_steps_step_time_ms_avg"].get<double>()) + " ms, " +
                (m.contains("last_10_steps_model_tflops_per_gpu_avg")
                     ? fmt(m["last_10_steps_model_tflops_per_gpu_avg"].get<double>())
                     : "n/a") +
                " TFLOP/s/GPU and " +
                (m.contains("last_10_steps_tokens_per_second_per_gpu_avg")
                     ? fmt(m["last_10_steps_tokens_per_second_per_gpu_avg"].get<double>())
                     : "n/a") +
                " tokens/s/GPU.";
  expected +=
      gates.empty() ? " No enforced gate ran, so the entry stays unverified." : " Gates: " + gates + ".";
  J metrics = {
      {"final_loss", metric_or_null(m, "final_loss")},
      {"initial_loss", metric_or_null(m, "initial_loss")},
      {"last_10_steps_model_tflops_per_gpu_avg", metric_or_null(m, "last_10_steps_model_tflops_per_gpu_avg")},
      {"last_10_steps_step_time_ms_avg", metric_or_null(m, "last_10_steps_step_time_ms_avg")},
      {"last_10_steps_tokens_per_second_per_gpu_avg",
       metric_or_null(m, "last_10_steps_tokens_per_second_per_gpu_avg")}};
  // MaxText's memstats "Using (GB)" is bytes_in_use / 2^30: GiB, the peak allocated. It prints
  // no reserved figure, so peak_reserved_memory_gib is left out.
  if (m.contains("peak_memory_gb")) metrics["peak_allocated_memory_gib"] = m["peak_memory_gb"];
  const std::string id =
      slugify(model + "-pretrain-performance-" + hardware + "-" + s.value("test_name", std::string()));
  return J({{"bridge_commit", maxtext},
            {"command_topologies", J::array({topology(results, s)})},
            {"commands", J::array({"cvs run " + results.value("suite", std::string()) + " --config " +
                                   cfg.value("file", std::string()) + " --gtest_filter=*" +
                                   s.value("test_name", std::string()) + "*"})},
            {"dimensions", J::object()},
            {"enabled_features", J::object()},
            {"entry_id", id},
            {"expected_result", expected + "\n"},
            {"hardware", hardware},
            {"last_verified", verified ? J(today) : J(nullptr)},
            {"metrics", metrics},
            {"precision", s.value("precision", std::string("bf16"))},
            {"source_pointer", "sweeps." + key},
            {"status", verified ? "verified" : "unverified"},
            {"variant", key},
            {"workflow", "pretrain_performance"}});
}

// The checkpoint save/resume entry.
J checkpoint_entry(const CardContext& x) {
  const auto& [results, cfg, model, hardware, maxtext, today] = x;
  const auto& c = results["checkpoint_resume"];
  const std::string sweep = c.value("sweep", std::string());
  const bool ok = c.value("passed", false);
  J metrics = {{"final_loss", c.value("boundary_loss_phase2", J(nullptr))},
               {"initial_loss", c.value("boundary_loss_phase1", J(nullptr))},
               {"last_10_steps_model_tflops_per_gpu_avg", nullptr},
               {"last_10_steps_step_time_ms_avg", nullptr},
               {"last_10_steps_tokens_per_second_per_gpu_avg", nullptr}};
  const auto& s = results["sweeps"].value(sweep, J::object());
  return J(
      {{"bridge_commit", maxtext},
       {"command_topologies", J::array({topology(results, s)})},
       {"commands", J::array({"cvs run " + results.value("suite", std::string()) + " --config " +
                              cfg.value("file", std::string()) + " --gtest_filter=*checkpoint_resume*"})},
       {"dimensions", J::object()},
       {"enabled_features", J::object()},
       {"entry_id", slugify(model + "-checkpoint-resume-" + hardware)},
       {"expected_result", "Phase 1 saved step " + c.value("saved_step", J(nullptr)).dump() +
                               "; phase 2 restored step " + c.value("restored_step", J(nullptr)).dump() +
                               " and resumed at step " + c.value("resumed_first_step", J(nullptr)).dump() +
                               ": " + c.value("message", std::string()) + "\n"},
       {"hardware", hardware},
       {"last_verified", ok ? J(today) : J(nullptr)},
       {"metrics", metrics},
       {"precision", s.value("precision", std::string("bf16"))},
       {"source_pointer", "checkpoint_resume"},
       {"status", ok ? "verified" : "unverified"},
       {"variant", sweep},
       {"workflow", "checkpoint_resume"}});
}

}  // namespace

J make_card(const J& results, const std::string& today) {
  if (!results.is_object() || results.value("schema_version", 0) != 1)
    throw std::invalid_argument("not a cvs results.json (schema_version 1)");
  const auto& cfg = results["config"];
  const auto& prov = results.value("provenance", J::object());
  const CardContext x{results,
                      cfg,
                      cfg.value("model", std::string("model")),
                      cfg.value("gpu_name", std::string()),
                      prov.value("maxtext_version", std::string("unknown")),
                      today};
  const std::string& model = x.model;
  const std::string& maxtext = x.maxtext;
  J entries = J::array();
  for (auto it = results["sweeps"].begin(); it != results["sweeps"].end(); ++it)
    entries.push_back(sweep_entry(x, it.key(), it.value()));
  if (results.contains("checkpoint_resume") && results["checkpoint_resume"].is_object())
    entries.push_back(checkpoint_entry(x));
  J card_model = {{"architecture", "MaxText " + results["sweeps"]
                                                    .begin()
                                                    .value()
                                                    .value("effective_config", J::object())
                                                    .value("model_name", model)},
                  {"base_container", cfg.value("image", std::string())},
                  {"bridge_commit", maxtext},
                  {"entries", entries},
                  {"hf_id", nullptr},
                  {"hf_revision", nullptr},
                  {"min_transformers_version", nullptr},
                  {"slug", slugify(model)},
                  {"source_card", cfg.value("file", std::string())},
                  {"summary", "cvs " + results.value("suite", std::string()) + " session of " +
                                  results.value("started_at", std::string()) + ": " +
                                  results.value("status", std::string()) + "\n"},
                  {"title", model}};
  return J{{"generation", "cvs results.json " + results.value("started_at", std::string())},
           {"models", J::array({card_model})},
           {"schema_version", 1},
           {"source", "cvs-maxtext"}};
}

}  // namespace cvs
