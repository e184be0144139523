#include "cvs/config/thresholds.hpp"

#include "cvs/base/enum_names.hpp"

#include "cvs/config/json_reader.hpp"

#include "cvs/catalog/metric_catalog.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cvs/config/config_error.hpp"
#include "cvs/config/sweep.hpp"
#include "cvs/config/text_file.hpp"

namespace cvs {

namespace {

constexpr EnumWord<ThresholdKind> kKindWords[] = {
    {ThresholdKind::Min, "min"},       {ThresholdKind::Max, "max"},
    {ThresholdKind::MaxMs, "max_ms"},  {ThresholdKind::MinTokS, "min_tok_s"},
    {ThresholdKind::Within, "within"}, {ThresholdKind::MinRatio, "min_ratio"},
    {ThresholdKind::Info, "info"}};

}  // namespace

std::string to_string(ThresholdKind k) {
  return word_of(kKindWords, k);
}

const std::vector<ThresholdSpec>* ThresholdFile::cell(const std::string& sweep_key) const {
  auto it = cells.find(sweep_key);
  return it == cells.end() ? nullptr : &it->second;
}

namespace {

bool known_metric(const std::string& m) {
  const auto& names = tracked_metric_names();
  return std::find(names.begin(), names.end(), m) != names.end();
}

}  // namespace

namespace {

// The extra key of a 'within' (tolerance_pct) or 'min_ratio' (reference) spec; false on an issue.
bool read_spec_extras(const nlohmann::ordered_json* tolerance, const nlohmann::ordered_json* reference,
                      const std::string& mptr, ThresholdSpec& s, IssueList& issues) {
  if (s.kind == ThresholdKind::Within) {
    if (!tolerance || !tolerance->is_number() || tolerance->get<double>() < 0) {
      issues.add(pointer_join(mptr, "tolerance_pct"),
                 "kind 'within' needs a non-negative numeric tolerance_pct", "add \"tolerance_pct\": 5.0");
      return false;
    }
    s.tolerance_pct = tolerance->get<double>();
  }
  if (s.kind == ThresholdKind::MinRatio) {
    if (!reference || !reference->is_string()) {
      issues.add(pointer_join(mptr, "reference"), "kind 'min_ratio' needs a 'reference' metric",
                 "add \"reference\": \"training.tokens_per_sec_per_gpu\"");
      return false;
    }
    std::string ref = reference->get<std::string>();
    if (ref.rfind("training.", 0) == 0) ref = ref.substr(9);
    if (!known_metric(ref)) {
      issues.add(pointer_join(mptr, "reference"),
                 "unknown reference metric '" + reference->get<std::string>() + "'",
                 "name a tracked metric, e.g. training.tokens_per_sec_per_gpu");
      return false;
    }
    s.reference = ref;
  }
  return true;
}

// One "training.<metric>": {kind, value, ...} of a cell.
std::optional<ThresholdSpec> read_spec(const std::string& key, const nlohmann::ordered_json& m,
                                       const std::string& mptr, IssueList& issues) {
  const std::string prefix = "training.";
  if (key.rfind(prefix, 0) != 0) {
    issues.add(mptr, "metric '" + key + "' lacks the training. namespace", "write \"training." + key + "\"");
    return std::nullopt;
  }
  ThresholdSpec s;
  s.metric = key.substr(prefix.size());
  if (!known_metric(s.metric)) {
    issues.add(
        mptr, "unknown metric '" + key + "'",
        "use one of the tracked metrics (see README: Tracked metrics), e.g. training.tokens_per_sec_per_gpu");
    return std::nullopt;
  }
  if (!m.is_object()) {
    issues.add(mptr, "spec must be an object {kind, value}", "write {\"kind\": \"min\", \"value\": 100.0}");
    return std::nullopt;
  }
  JsonReader r(issues, m, mptr, "a threshold spec");
  const auto* kind = r.find("kind");
  const auto* value = r.find("value");
  const auto* tolerance = r.find("tolerance_pct");
  const auto* reference = r.find("reference");
  r.finish();
  if (!kind || !kind->is_string()) {
    issues.add(pointer_join(mptr, "kind"), "missing or non-string 'kind'",
               "set kind to min, max, max_ms, min_tok_s, within, min_ratio or info");
    return std::nullopt;
  }
  auto pk = value_of(kKindWords, kind->get<std::string>());
  if (!pk) {
    issues.add(pointer_join(mptr, "kind"), "unknown kind '" + kind->get<std::string>() + "'",
               "use min, max, max_ms, min_tok_s, within, min_ratio or info");
    return std::nullopt;
  }
  s.kind = *pk;
  if (!value || !value->is_number()) {
    issues.add(pointer_join(mptr, "value"), "missing or non-numeric 'value'",
               "set a numeric value, e.g. 100.0");
    return std::nullopt;
  }
  s.value = value->get<double>();
  if (!read_spec_extras(tolerance, reference, mptr, s, issues)) return std::nullopt;
  return s;
}

// One sweep-key cell {metric: spec}.
void read_cell(const std::string& key, const nlohmann::ordered_json& cell, const std::string& file,
               ThresholdFile& tf, IssueList& issues) {
  const std::string cptr = pointer_join("", key);
  try {
    (void)parse_sweep_key(key, file, cptr);
  } catch (const ConfigError& e) {
    issues.append(e);
    return;
  }
  if (!cell.is_object()) {
    issues.add(cptr, "cell must be an object {metric: spec}",
               "write {\"training.final_loss\": {\"kind\": \"max\", \"value\": 10}}");
    return;
  }
  auto& specs = tf.cells[key];
  for (auto m = cell.begin(); m != cell.end(); ++m)
    if (m.key().empty() || m.key()[0] != '_')
      if (auto s = read_spec(m.key(), *m, pointer_join(cptr, m.key()), issues)) specs.push_back(*s);
}

}  // namespace

ThresholdFile parse_thresholds(const std::string& text, const std::filesystem::path& file) {
  IssueList issues(file.string());
  nlohmann::ordered_json root;
  try {
    root = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file.string(), "", std::string("invalid JSON: ") + e.what(), "fix the JSON syntax");
  }
  if (!root.is_object())
    throw ConfigError(file.string(), "", "a threshold file must be a JSON object of sweep-key cells",
                      "write {\"BS=1,PRECISION=BF16,SL=2048\": {\"training.final_loss\": {\"kind\": \"max\", "
                      "\"value\": 10}}}");
  ThresholdFile tf;
  tf.file = file;
  for (auto c = root.begin(); c != root.end(); ++c) {
    if (c.key() == "_calibration")
      tf.calibration = calibration_from_json(*c, file.string());
    else if (!c.key().empty() && c.key()[0] == '_')
      tf.comments[c.key()] = c->is_string() ? c->get<std::string>() : c->dump();
    else
      read_cell(c.key(), *c, file.string(), tf, issues);
  }
  issues.throw_if_any();
  return tf;
}

ThresholdFile load_thresholds(const std::filesystem::path& file) {
  const auto text = read_text_file(file);
  if (!text)
    throw ConfigError(file.string(), "", "cannot read the threshold file",
                      "check threshold_json in the config");
  return parse_thresholds(*text, file);
}

}  // namespace cvs
