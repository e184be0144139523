#include "cvs/config/maxtext_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>

namespace cvs {
namespace {

void merge_into(OrderedJson& base, const OrderedJson& over) {
  for (auto it = over.begin(); it != over.end(); ++it) base[it.key()] = it.value();
}

std::string float_text(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  // Shortest text that round-trips.
  for (int prec = 1; prec <= 17; ++prec) {
    char b2[64];
    std::snprintf(b2, sizeof b2, "%.*g", prec, d);
    if (std::strtod(b2, nullptr) == d) {
      std::snprintf(buf, sizeof buf, "%s", b2);
      break;
    }
  }
  std::string s = buf;
  // YAML 1.1 loaders read "1e-05" as a string: every float carries a '.' in its mantissa.
  const auto e = s.find_first_of("eE");
  const std::string mant = s.substr(0, e);
  if (mant.find('.') == std::string::npos) s.insert(e == std::string::npos ? s.size() : e, ".0");
  return s;
}

void emit(YAML::Emitter& out, const OrderedJson& j) {
  switch (j.type()) {
    case OrderedJson::value_t::object:
      out << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        out << YAML::Key << it.key() << YAML::Value;
        emit(out, it.value());
      }
      out << YAML::EndMap;
      break;
    case OrderedJson::value_t::array:
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& e : j) emit(out, e);
      out << YAML::EndSeq;
      break;
    case OrderedJson::value_t::string:
      out << YAML::DoubleQuoted << j.get<std::string>();
      break;
    case OrderedJson::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case OrderedJson::value_t::number_integer:
      out << j.get<long long>();
      break;
    case OrderedJson::value_t::number_unsigned:
      out << j.get<unsigned long long>();
      break;
    case OrderedJson::value_t::number_float:
      out << float_text(j.get<double>());
      break;
    default:
      out << YAML::Null;
  }
}

}  // namespace

namespace {

// What the driver sets for every run: its name and output, and JAX's compilation cache (the
// config's paths.compile_cache, unless its maxtext_config names a jax_cache_dir of its own).
void set_run_keys(OrderedJson& m, const SuiteConfig& cfg, const std::string& run_name,
                  const std::string& base_output_directory) {
  m["run_name"] = run_name;
  m["base_output_directory"] = base_output_directory;
  if (!cfg.paths.compile_cache.empty() && !m.contains("jax_cache_dir"))
    m["jax_cache_dir"] = cfg.paths.compile_cache;
}

}  // namespace

OrderedJson sweep_maxtext_config(const SuiteConfig& cfg, const std::string& sweep_key,
                                 const std::string& run_name, const std::string& base_output_directory) {
  const Sweep& s = cfg.sweep(sweep_key);
  OrderedJson m = cfg.train_params.maxtext_config;
  merge_into(m, key_overrides(s.parsed, cfg.gpu_name, cfg.file.string(), "/sweeps/" + sweep_key));
  merge_into(m, s.overrides);
  set_run_keys(m, cfg, run_name, base_output_directory);
  return m;
}

OrderedJson smoke_maxtext_config(const SuiteConfig& cfg, const std::string& run_name,
                                 const std::string& base_output_directory) {
  OrderedJson m = cfg.train_params.maxtext_config;
  m["quantization"] = "";
  m["steps"] = cfg.smoke.steps;
  m["per_device_batch_size"] = cfg.smoke.per_device_batch_size;
  m["max_target_length"] = cfg.smoke.max_target_length;
  m["enable_checkpointing"] = false;
  set_run_keys(m, cfg, run_name, base_output_directory);
  return m;
}

std::string to_maxtext_yaml(const OrderedJson& maxtext_config) {
  YAML::Emitter out;
  emit(out, maxtext_config);
  return std::string(out.c_str()) + "\n";
}

std::optional<std::string> xla_flags_value(const TrainParams& tp) {
  if (tp.xla_flags.empty()) return std::nullopt;
  std::string v;
  for (const auto& [k, val] : tp.xla_flags) {
    if (!v.empty()) v += ' ';
    v += "--" + k + "=" + val;
  }
  return v;
}

}  // namespace cvs
