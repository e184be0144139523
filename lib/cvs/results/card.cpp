#include "cvs/results/card.hpp"

#include "cvs/base/format.hpp"
#include "cvs/results/results_file.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace cvs {
namespace {

using J = nlohmann::ordered_json;

J metric_or_null(const SweepRecord& s, const char* k) {
  const double* v = s.metric(k);
  return v && !std::isnan(*v) ? J(*v) : J(nullptr);
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

// The stages of one sweep: its training run, metric tests and checkpoint test.
std::vector<const StageRecord*> stages_of(const Results& results, const std::string& sweep_key) {
  std::vector<const StageRecord*> v;
  for (const auto& st : results.stages)
    if (st.sweep_key() == sweep_key) v.push_back(&st);
  return v;
}

// A sweep the session did not run (or one the checkpoint names that is not in the file) counts
// one node of the config's GPUs.
J topology(const Results& results, const SweepRecord* sweep) {
  J t = J::object();
  const bool ran = sweep && sweep->status != SweepStatus::NotRun;
  const long long nodes = ran ? static_cast<long long>(sweep->num_nodes) : 1;
  const int gpn = ran ? sweep->gpus_per_node : results.config.gpus_per_node;
  t["gpus_per_node"] = std::to_string(gpn);
  t["nodes"] = std::to_string(nodes);
  const J par = sweep ? sweep->parallelism : J::object();
  // The cards' topology keys from the mesh that ran (config/mesh's plan, a -1 filled as MaxText
  // fills it): each is its ici axis x its dcn axis. A record older than the plan: MaxText's keys, a
  // -1 or absent axis counted 1. MaxText's own keys stay beside them.
  const bool planned = sweep && (!sweep->mesh_ici.empty() || !sweep->mesh_dcn.empty());
  for (const auto& [card_key, axis] :
       {std::pair{"tensor_parallel", "tensor"}, std::pair{"pipeline_parallel", "pipeline"},
        std::pair{"context_parallel", "context"}, std::pair{"expert_parallel", "expert"}}) {
    long long product = 1;
    if (planned) {
      for (const auto& [prefix, level] :
           {std::pair{"ici_", &sweep->mesh_ici}, std::pair{"dcn_", &sweep->mesh_dcn}})
        if (const auto it = level->find(std::string(prefix) + axis + "_parallelism"); it != level->end())
          product *= it->second;
    } else {
      for (const char* level : {"ici_", "dcn_"}) {
        const auto it = par.find(std::string(level) + axis + "_parallelism");
        if (it != par.end() && it->is_number_integer() && it->get<long long>() > 0)
          product *= it->get<long long>();
      }
    }
    t[card_key] = std::to_string(product);
  }
  for (auto it = par.begin(); it != par.end(); ++it) t[it.key()] = it.value().dump();
  if (sweep && !sweep->mesh.empty()) t["mesh"] = sweep->mesh;
  t["sequence_length"] = sweep ? sweep->effective("max_target_length") : std::string();
  t["total_gpus"] = nodes * gpn;
  return t;
}

}  // namespace

namespace {

// What every entry of one results.json shares.
struct CardContext {
  const Results& results;
  std::string model, hardware, maxtext, today;
};

// The entry of one sweep: verified when it completed, no gate failed or went undecided, and at
// least one gate passed.
J sweep_entry(const CardContext& x, const std::string& key, const SweepRecord& s) {
  const auto& [results, model, hardware, maxtext, today] = x;
  const auto stages = stages_of(results, key);
  int fails = 0, passes = 0;
  std::string gates;
  for (const auto* st : stages) {
    // A gate without evidence (INCONCLUSIVE) or a stage the infrastructure kept from deciding
    // (ERROR) verifies nothing, whatever on_inconclusive made of it.
    fails += is_unverified(st->outcome);
    const std::string metric = st->property("metric");
    if (metric.empty() || (st->outcome != Outcome::Pass && st->outcome != Outcome::Fail &&
                           st->outcome != Outcome::Inconclusive))
      continue;
    passes += st->outcome == Outcome::Pass;
    gates += (gates.empty() ? "" : "; ") + metric + " " + st->property("value") + " " +
             st->property("threshold_kind") + " " + st->property("threshold_value") + " " +
             to_string(st->outcome);
  }
  const bool ran = s.status != SweepStatus::NotRun;
  const bool completed = s.status == SweepStatus::Completed;
  const bool verified = completed && fails == 0 && passes > 0;
  const std::string precision = ran ? s.precision : "bf16";
  std::string expected = "On " + std::to_string(ran ? s.num_nodes : 1) + " node(s) x " +
                         std::to_string(ran ? s.gpus_per_node : 1) + " " + hardware + " device(s), the " +
                         std::to_string(s.steps) + "-step " + precision + " MaxText " + maxtext + " run of " +
                         model + " (" + key + ") " + (completed ? "completed" : "did not complete") + ".";
  auto figure = [&](const char* k) {
    const double* v = s.metric(k);
    return v ? fmt(*v) : std::string("n/a");
  };
  if (s.metric("last_10_steps_step_time_ms_avg"))
    expected += " The last 10 steady-state steps averaged " + figure("last_10_steps_step_time_ms_avg") +
                " ms, " + figure("last_10_steps_model_tflops_per_gpu_avg") + " TFLOP/s/GPU and " +
                figure("last_10_steps_tokens_per_second_per_gpu_avg") + " tokens/s/GPU.";
  expected +=
      gates.empty() ? " No enforced gate ran, so the entry stays unverified." : " Gates: " + gates + ".";
  J metrics = {
      {"final_loss", metric_or_null(s, "final_loss")},
      {"initial_loss", metric_or_null(s, "initial_loss")},
      {"last_10_steps_model_tflops_per_gpu_avg", metric_or_null(s, "last_10_steps_model_tflops_per_gpu_avg")},
      {"last_10_steps_step_time_ms_avg", metric_or_null(s, "last_10_steps_step_time_ms_avg")},
      {"last_10_steps_tokens_per_second_per_gpu_avg",
       metric_or_null(s, "last_10_steps_tokens_per_second_per_gpu_avg")}};
  // MaxText's memstats "Using (GB)" is bytes_in_use / 2^30: GiB, the peak allocated. It prints
  // no reserved figure, so peak_reserved_memory_gib is left out.
  if (s.metric("peak_memory_gb")) metrics["peak_allocated_memory_gib"] = metric_or_null(s, "peak_memory_gb");
  const std::string id = slugify(model + "-pretrain-performance-" + hardware + "-" + s.test_name);
  return J({{"bridge_commit", maxtext},
            {"command_topologies", J::array({topology(results, &s)})},
            {"commands", J::array({"cvs run " + results.suite + " --config " + results.config.file +
                                   " --gtest_filter=*" + s.test_name + "*"})},
            {"dimensions", J::object()},
            {"enabled_features", J::object()},
            {"entry_id", id},
            {"expected_result", expected + "\n"},
            {"hardware", hardware},
            {"last_verified", verified ? J(today) : J(nullptr)},
            {"metrics", metrics},
            {"precision", precision},
            {"source_pointer", "sweeps." + key},
            {"status", verified ? "verified" : "unverified"},
            {"variant", key},
            {"workflow", "pretrain_performance"}});
}

// The checkpoint save/resume entry.
J checkpoint_entry(const CardContext& x, const CheckpointRecord& c) {
  const auto& [results, model, hardware, maxtext, today] = x;
  auto opt = [](const auto& o) { return o ? J(*o) : J(nullptr); };
  J metrics = {{"final_loss", opt(c.boundary_loss_phase2)},
               {"initial_loss", opt(c.boundary_loss_phase1)},
               {"last_10_steps_model_tflops_per_gpu_avg", nullptr},
               {"last_10_steps_step_time_ms_avg", nullptr},
               {"last_10_steps_tokens_per_second_per_gpu_avg", nullptr}};
  const SweepRecord* s = results.sweep(c.sweep);
  return J(
      {{"bridge_commit", maxtext},
       {"command_topologies", J::array({topology(results, s)})},
       {"commands", J::array({"cvs run " + results.suite + " --config " + results.config.file +
                              " --gtest_filter=*checkpoint_resume*"})},
       {"dimensions", J::object()},
       {"enabled_features", J::object()},
       {"entry_id", slugify(model + "-checkpoint-resume-" + hardware)},
       {"expected_result", "Phase 1 saved step " + opt(c.saved_step).dump() + "; phase 2 restored step " +
                               opt(c.restored_step).dump() + " and resumed at step " +
                               opt(c.resumed_first_step).dump() + ": " + c.message + "\n"},
       {"hardware", hardware},
       {"last_verified", c.passed ? J(today) : J(nullptr)},
       {"metrics", metrics},
       {"precision", s && s->status != SweepStatus::NotRun ? s->precision : std::string("bf16")},
       {"source_pointer", "checkpoint_resume"},
       {"status", c.passed ? "verified" : "unverified"},
       {"variant", c.sweep},
       {"workflow", "checkpoint_resume"}});
}

}  // namespace

J make_card(const Results& results, const std::string& today) {
  std::string maxtext = "unknown";
  if (auto v = results.provenance.find("maxtext_version"); v != results.provenance.end() && v->is_string())
    maxtext = v->get<std::string>();
  const std::string model = results.config.model.empty() ? "model" : results.config.model;
  const CardContext x{results, model, results.config.gpu_name, maxtext, today};
  J entries = J::array();
  for (const auto& [key, s] : results.sweeps) entries.push_back(sweep_entry(x, key, s));
  if (results.checkpoint) entries.push_back(checkpoint_entry(x, *results.checkpoint));
  std::string architecture =
      results.sweeps.empty() ? "" : results.sweeps.front().second.effective("model_name");
  J card_model = {{"architecture", "MaxText " + (architecture.empty() ? model : architecture)},
                  {"base_container", results.config.image},
                  {"bridge_commit", maxtext},
                  {"entries", entries},
                  {"hf_id", nullptr},
                  {"hf_revision", nullptr},
                  {"min_transformers_version", nullptr},
                  {"slug", slugify(model)},
                  {"source_card", results.config.file},
                  {"summary", "cvs " + results.suite + " session of " + results.started_at + ": " +
                                  to_string(results.status()) + "\n"},
                  {"title", model}};
  return J{{"generation", "cvs results.json " + results.started_at},
           {"models", J::array({card_model})},
           {"schema_version", 1},
           {"source", "cvs-maxtext"}};
}

}  // namespace cvs
