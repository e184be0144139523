#include "cvs/config/thresholds.hpp"

#include "cvs/config/json_reader.hpp"

#include "cvs/base/format.hpp"
#include "cvs/catalog/metric_catalog.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cvs/config/config_error.hpp"
#include "cvs/config/text_file.hpp"

namespace cvs {

std::string to_string(ThresholdKind k) {
  switch (k) {
    case ThresholdKind::Min:
      return "min";
    case ThresholdKind::Max:
      return "max";
    case ThresholdKind::MaxMs:
      return "max_ms";
    case ThresholdKind::MinTokS:
      return "min_tok_s";
    case ThresholdKind::Within:
      return "within";
    case ThresholdKind::MinRatio:
      return "min_ratio";
    case ThresholdKind::Info:
      return "info";
  }
  return "?";
}

const std::vector<ThresholdSpec>* ThresholdFile::cell(const std::string& sweep_key) const {
  auto it = cells.find(sweep_key);
  return it == cells.end() ? nullptr : &it->second;
}

namespace {

std::optional<ThresholdKind> parse_kind(const std::string& s) {
  if (s == "min") return ThresholdKind::Min;
  if (s == "max") return ThresholdKind::Max;
  if (s == "max_ms") return ThresholdKind::MaxMs;
  if (s == "min_tok_s") return ThresholdKind::MinTokS;
  if (s == "within") return ThresholdKind::Within;
  if (s == "min_ratio") return ThresholdKind::MinRatio;
  if (s == "info") return ThresholdKind::Info;
  return std::nullopt;
}

bool known_metric(const std::string& m) {
  const auto& names = tracked_metric_names();
  return std::find(names.begin(), names.end(), m) != names.end();
}

std::string fmt(double v) {
  return short_number(v);
}

std::string unit(ThresholdKind k) {
  if (k == ThresholdKind::MaxMs) return " ms";
  if (k == ThresholdKind::MinTokS) return " tok/s";
  return "";
}

}  // namespace

namespace {

// The extra key of a 'within' (tolerance_pct) or 'min_ratio' (reference) spec; false on an issue.
bool read_spec_extras(const nlohmann::ordered_json& m, const std::string& mptr, ThresholdSpec& s,
                      IssueList& issues) {
  if (s.kind == ThresholdKind::Within) {
    auto t = m.find("tolerance_pct");
    if (t == m.end() || !t->is_number() || t->get<double>() < 0) {
      issues.add(pointer_join(mptr, "tolerance_pct"),
                 "kind 'within' needs a non-negative numeric tolerance_pct", "add \"tolerance_pct\": 5.0");
      return false;
    }
    s.tolerance_pct = t->get<double>();
  }
  if (s.kind == ThresholdKind::MinRatio) {
    auto r = m.find("reference");
    if (r == m.end() || !r->is_string()) {
      issues.add(pointer_join(mptr, "reference"), "kind 'min_ratio' needs a 'reference' metric",
                 "add \"reference\": \"training.tokens_per_sec_per_gpu\"");
      return false;
    }
    std::string ref = r->get<std::string>();
    if (ref.rfind("training.", 0) == 0) ref = ref.substr(9);
    if (!known_metric(ref)) {
      issues.add(pointer_join(mptr, "reference"), "unknown reference metric '" + r->get<std::string>() + "'",
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
  JsonReader(issues).unknown_keys(m, mptr, {"kind", "value", "tolerance_pct", "reference"},
                                  "a threshold spec");
  auto kind = m.find("kind");
  if (kind == m.end() || !kind->is_string()) {
    issues.add(pointer_join(mptr, "kind"), "missing or non-string 'kind'",
               "set kind to min, max, max_ms, min_tok_s, within, min_ratio or info");
    return std::nullopt;
  }
  auto pk = parse_kind(kind->get<std::string>());
  if (!pk) {
    issues.add(pointer_join(mptr, "kind"), "unknown kind '" + kind->get<std::string>() + "'",
               "use min, max, max_ms, min_tok_s, within, min_ratio or info");
    return std::nullopt;
  }
  s.kind = *pk;
  auto value = m.find("value");
  if (value == m.end() || !value->is_number()) {
    issues.add(pointer_join(mptr, "value"), "missing or non-numeric 'value'",
               "set a numeric value, e.g. 100.0");
    return std::nullopt;
  }
  s.value = value->get<double>();
  if (!read_spec_extras(m, mptr, s, issues)) return std::nullopt;
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
      tf.calibration = *c;
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

bool is_speed_metric(const std::string& metric) {
  const auto* spec = find_metric(metric);
  return spec && spec->speed;
}

bool loss_curve_gated(const LossCurve& lc, bool enforce_thresholds) {
  return lc.enforce && enforce_thresholds;
}

namespace {

// Where the interval [lo, hi] lies against the gate: +1 clears it, -1 wholly fails it, 0 straddles.
int interval_side(const Interval& i, const ThresholdSpec& s) {
  switch (s.kind) {
    case ThresholdKind::Min:
    case ThresholdKind::MinTokS:
      return i.lo >= s.value ? 1 : (i.hi < s.value ? -1 : 0);
    case ThresholdKind::Max:
    case ThresholdKind::MaxMs:
      return i.hi <= s.value ? 1 : (i.lo > s.value ? -1 : 0);
    case ThresholdKind::Within: {
      const double tol = std::fabs(s.value) * *s.tolerance_pct / 100.0;
      if (i.lo >= s.value - tol && i.hi <= s.value + tol) return 1;
      return (i.hi < s.value - tol || i.lo > s.value + tol) ? -1 : 0;
    }
    default:
      return 0;
  }
}

bool interval_kind(ThresholdKind k) {
  return k == ThresholdKind::Min || k == ThresholdKind::MinTokS || k == ThresholdKind::Max ||
         k == ThresholdKind::MaxMs || k == ThresholdKind::Within;
}

// Decides a speed metric on its steady-state interval (see evaluate_metric).
void decide_on_interval(Evaluation& e, const RunMetrics& run, bool enforce) {
  const auto& s = *e.spec;
  auto it = run.steady.intervals.find(e.metric);
  if (it == run.steady.intervals.end()) {
    e.outcome = enforce ? Outcome::Inconclusive : Outcome::Record;
    e.message = fmt(*e.actual) + unit(s.kind) + " against " + to_string(s.kind) + " " + fmt(s.value) +
                unit(s.kind) + ": no interval to decide on (" +
                (run.steady.found ? "too few steady-state steps" : run.steady.why) + ")";
    return;
  }
  const Interval& i = it->second;
  e.interval = i;
  if (s.value != 0) {
    const bool higher_better = s.kind == ThresholdKind::Min || s.kind == ThresholdKind::MinTokS;
    e.margin_pct = (higher_better ? 1 : -1) * (i.estimate - s.value) / std::fabs(s.value) * 100.0;
  }
  const int side = interval_side(i, s);
  std::string bound = to_string(s.kind) + " " + fmt(s.value) + unit(s.kind);
  if (s.kind == ThresholdKind::Within) bound = fmt(s.value) + " +/- " + fmt(*s.tolerance_pct) + "%";
  std::string cmp =
      fmt(i.estimate) + unit(s.kind) + ", interval [" + fmt(i.lo) + ", " + fmt(i.hi) + "] over " +
      std::to_string(run.steady.n) + " steady-state steps from step " +
      std::to_string(run.steady.first_step) +
      (run.steady.drift ? " (widened for a drift of " + fmt(100 * run.steady.drift->relative) + " %)" : "") +
      ": " +
      (side > 0   ? "clears "
       : side < 0 ? "wholly fails "
                  : "straddles ") +
      bound;
  const Outcome o = side > 0 ? Outcome::Pass : (side < 0 ? Outcome::Fail : Outcome::Inconclusive);
  if (!enforce) {
    e.outcome = Outcome::Record;
    e.message = cmp + " (enforce_thresholds is false: would be " + to_string(o) + ")";
    return;
  }
  e.outcome = o;
  e.message = cmp;
}

// Decides a metric on its value (everything but the speed metrics' interval gates).
void decide_on_point(Evaluation& e, const RunMetrics& run, bool enforce) {
  const auto& s = *e.spec;
  const double a = *e.actual;
  bool ok = false;
  std::string cmp;
  switch (s.kind) {
    case ThresholdKind::Min:
    case ThresholdKind::MinTokS:
      ok = a >= s.value;
      cmp = fmt(a) + unit(s.kind) + (ok ? " >= " : " < ") + fmt(s.value) + unit(s.kind);
      break;
    case ThresholdKind::Max:
    case ThresholdKind::MaxMs:
      ok = a <= s.value;
      cmp = fmt(a) + unit(s.kind) + (ok ? " <= " : " > ") + fmt(s.value) + unit(s.kind);
      break;
    case ThresholdKind::Within: {
      const double tol = std::fabs(s.value) * *s.tolerance_pct / 100.0;
      ok = std::fabs(a - s.value) <= tol;
      cmp = fmt(a) + (ok ? " within " : " outside ") + fmt(s.value) + " +/- " + fmt(*s.tolerance_pct) + "%";
      break;
    }
    case ThresholdKind::MinRatio: {
      auto ref = run.get(s.reference);
      if (!ref || *ref == 0) {
        e.outcome = enforce ? Outcome::Fail : Outcome::Record;
        e.message =
            "reference metric " + s.reference + " was not produced (or is 0): ratio cannot be checked";
        return;
      }
      const double ratio = a / *ref;
      ok = ratio >= s.value;
      cmp = fmt(a) + " / " + s.reference + " " + fmt(*ref) + " = " + fmt(ratio) + (ok ? " >= " : " < ") +
            fmt(s.value);
      break;
    }
    case ThresholdKind::Info:
      e.outcome = Outcome::Record;
      e.message = fmt(a) + " (info: recorded, placeholder " + fmt(s.value) + ")";
      return;
  }
  if (!std::isfinite(a)) {
    ok = false;
    cmp = "non-finite value " + fmt(a) + " never passes (" + to_string(s.kind) + " " + fmt(s.value) + ")";
  }
  if (!enforce) {
    e.outcome = Outcome::Record;
    e.message = cmp + " (enforce_thresholds is false: would " + (ok ? "PASS" : "FAIL") + ")";
    return;
  }
  e.outcome = ok ? Outcome::Pass : Outcome::Fail;
  e.message = cmp;
}

}  // namespace

Evaluation evaluate_metric(const std::string& metric, const RunMetrics& run,
                           const std::vector<ThresholdSpec>* cell, bool enforce) {
  Evaluation e;
  e.metric = metric;
  e.actual = run.get(metric);
  if (cell)
    for (const auto& s : *cell)
      if (s.metric == metric) e.spec = s;
  if (!e.actual) {
    e.outcome = Outcome::NA;
    e.message = "not produced by this run";
    return e;
  }
  const double a = *e.actual;
  if (is_speed_metric(metric) && (!e.spec || e.spec->kind == ThresholdKind::Info)) {
    e.outcome = Outcome::Record;
    e.message = fmt(a) + " (" + kUncalibrated + ")";
    return e;
  }
  if (!e.spec) {
    e.outcome = Outcome::Record;
    e.message = fmt(a) + (cell ? " (no threshold for this metric in the cell)"
                               : " (no threshold cell for this sweep key)");
    return e;
  }
  const auto& s = *e.spec;
  if (std::isfinite(a) && interval_kind(s.kind) && has_interval(metric)) {
    decide_on_interval(e, run, enforce);
    return e;
  }
  decide_on_point(e, run, enforce);
  return e;
}

Evaluation evaluate_loss_curve(const RunMetrics& run, const LossCurve& lc, bool enforce_thresholds) {
  Evaluation e;
  e.metric = "loss_curve_slope";
  e.actual = run.get(e.metric);
  if (!e.actual) {
    e.outcome = Outcome::NA;
    e.message = "not produced by this run";
    return e;
  }
  const bool ok = *e.actual < lc.max_slope;
  e.message = "slope " + fmt(*e.actual) + (ok ? " < " : " >= ") + "max_slope " + fmt(lc.max_slope) +
              " over " + std::to_string(run.sampled_curve.size()) + " sampled points";
  if (!loss_curve_gated(lc, enforce_thresholds)) {
    e.outcome = Outcome::Record;
    e.message += !lc.enforce ? " (loss_curve.enforce is false" : " (enforce_thresholds is false";
    e.message += std::string(": would ") + (ok ? "PASS" : "FAIL") + ")";
    return e;
  }
  e.outcome = ok ? Outcome::Pass : Outcome::Fail;
  return e;
}

}  // namespace cvs
