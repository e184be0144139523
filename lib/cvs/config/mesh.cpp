#include "cvs/config/mesh.hpp"

#include <algorithm>
#include <regex>

namespace cvs {
namespace {

// MaxText's axes (configs/base.yml) and their defaults there: fsdp fills the ici mesh, data the dcn.
constexpr const char* kAxes[] = {"diloco",
                                 "data",
                                 "fsdp",
                                 "fsdp_transpose",
                                 "sequence",
                                 "context",
                                 "context_usp_ulysses",
                                 "context_autoregressive",
                                 "tensor",
                                 "tensor_sequence",
                                 "autoregressive",
                                 "pipeline",
                                 "expert"};

long long default_of(const std::string& kind, const std::string& axis) {
  return (kind == "ici" && axis == "fsdp") || (kind == "dcn" && axis == "data") ? -1 : 1;
}

struct Axis {
  std::string key;      // ici_fsdp_parallelism
  std::string pointer;  // where its value was set ("" for MaxText's default)
  long long value = 1;
};

// The value of a MaxText key for a sweep: the sweep's override, else maxtext_config's.
const OrderedJson* effective(const SuiteConfig& cfg, const std::string& sweep, const std::string& key,
                             std::string& pointer) {
  const auto& s = cfg.sweep(sweep).overrides;
  if (auto it = s.find(key); it != s.end()) {
    pointer = pointer_join(pointer_join("/sweeps", sweep), key);
    return &*it;
  }
  const auto& m = cfg.train_params.maxtext_config;
  if (auto it = m.find(key); it != m.end()) {
    pointer = pointer_join("/train_params/maxtext_config", key);
    return &*it;
  }
  return nullptr;
}

std::vector<Axis> axes_of(const SuiteConfig& cfg, const std::string& sweep, const std::string& kind,
                          std::vector<ConfigIssue>& issues) {
  std::vector<std::string> names;
  for (const char* a : kAxes) names.emplace_back(a);
  // Axes this list does not know (another MaxText version's) count too.
  static const std::regex key_re("^(ici|dcn)_(.+)_parallelism$");
  for (const auto* obj : {&cfg.train_params.maxtext_config, &cfg.sweep(sweep).overrides})
    for (const auto& [k, v] : obj->items()) {
      std::smatch m;
      if (std::regex_match(k, m, key_re) && m[1] == kind &&
          std::find(names.begin(), names.end(), m[2].str()) == names.end())
        names.push_back(m[2].str());
    }
  std::vector<Axis> out;
  for (const auto& a : names) {
    Axis x{kind + "_" + a + "_parallelism", "", default_of(kind, a)};
    if (const auto* v = effective(cfg, sweep, x.key, x.pointer)) {
      if (!v->is_number_integer() || (v->get<long long>() < 1 && v->get<long long>() != -1)) {
        issues.push_back({cfg.file.string(), x.pointer,
                          x.key + " is " + v->dump() + ": a parallelism is -1 or a whole number >= 1",
                          "write a whole number, or -1 for the one axis that takes the rest"});
        continue;
      }
      x.value = v->get<long long>();
    }
    out.push_back(std::move(x));
  }
  return out;
}

std::string product_text(const std::vector<Axis>& axes) {
  std::string t;
  for (const auto& a : axes)
    if (a.value != 1) t += (t.empty() ? "" : " x ") + a.key + " " + std::to_string(a.value);
  return t.empty() ? "every axis 1" : t;
}

// MaxText's rule for one kind: at most one -1, which takes target / the rest's product; then the
// product must be the target.
std::vector<std::pair<std::string, long long>> fill(std::vector<Axis> axes, long long target,
                                                    const std::string& kind, const std::string& what,
                                                    const SuiteConfig& cfg,
                                                    std::vector<ConfigIssue>& issues) {
  long long product = 1;
  std::vector<Axis*> open;
  for (auto& a : axes) {
    if (a.value == -1)
      open.push_back(&a);
    else
      product *= a.value;
  }
  const std::string where = open.empty() ? (axes.empty() ? "" : axes.front().pointer) : open.front()->pointer;
  auto say = [&](const std::string& msg, const std::string& fix) {
    std::string ptr = where;
    for (const auto& a : axes)
      if (ptr.empty() && !a.pointer.empty()) ptr = a.pointer;
    issues.push_back({cfg.file.string(), ptr.empty() ? "/train_params/maxtext_config" : ptr, msg, fix});
  };
  if (open.size() > 1) {
    say("more than one " + kind + " axis is -1 (" + open[0]->key + ", " + open[1]->key +
            "): MaxText fills only one",
        "set all but one of them to a number");
    return {};
  }
  if (!open.empty()) {
    if (product == 0 || target % product != 0) {
      say("the " + kind + " mesh cannot fill " + open.front()->key + ": " + product_text(axes) +
              " does not divide the " + std::to_string(target) + " " + what,
          "make the product of the other " + kind + " axes divide " + std::to_string(target));
      return {};
    }
    open.front()->value = target / product;
    product = target;
  }
  if (product != target) {
    say("the " + kind + " mesh (" + product_text(axes) + " = " + std::to_string(product) +
            ") does not match the " + std::to_string(target) + " " + what,
        "make the " + kind + " axes multiply to " + std::to_string(target) + ", or set one of them to -1");
    return {};
  }
  std::vector<std::pair<std::string, long long>> out;
  for (const auto& a : axes)
    if (a.value != 1) out.emplace_back(a.key, a.value);
  return out;
}

}  // namespace

std::string MeshPlan::describe() const {
  auto list = [](const std::vector<std::pair<std::string, long long>>& axes) {
    std::string t;
    for (const auto& [k, v] : axes) {
      std::string name = k.substr(4, k.size() - 4 - std::string("_parallelism").size());
      t += (t.empty() ? "" : " x ") + name + " " + std::to_string(v);
    }
    return t.empty() ? std::string("1") : t;
  };
  return "ici " + list(ici) + " over " + std::to_string(devices_per_slice) + " device(s) a slice; dcn " +
         list(dcn) + " over " + std::to_string(slices) + " slice(s)";
}

MeshCheck check_mesh(const SuiteConfig& cfg, const std::string& sweep, std::size_t nodes) {
  MeshCheck c;
  const long long devices = static_cast<long long>(nodes) * cfg.gpus_per_node;
  std::string ptr;
  const auto* ns = effective(cfg, sweep, "num_slices", ptr);
  const auto* hw = effective(cfg, sweep, "hardware", ptr);
  const bool cpu = hw && hw->is_string() && hw->get<std::string>() == "cpu";
  if (ns && ns->is_number_integer() && ns->get<long long>() != -1)
    c.plan.slices = ns->get<long long>();
  else
    c.plan.slices = cpu ? 1 : static_cast<long long>(nodes);
  if (c.plan.slices < 1 || devices % c.plan.slices != 0) {
    c.issues.push_back({cfg.file.string(), ptr,
                        "num_slices " + std::to_string(c.plan.slices) + " does not divide the " +
                            std::to_string(devices) + " devices",
                        "set num_slices to a divisor of nodes x gpus_per_node, or -1"});
    return c;
  }
  c.plan.devices_per_slice = devices / c.plan.slices;
  const std::string per_slice =
      cpu && c.plan.slices == 1 ? "devices (" + std::to_string(nodes) + " node(s) x gpus_per_node " +
                                      std::to_string(cfg.gpus_per_node) + ": JAX's CPU backend is one slice)"
                                : "devices a slice (gpus_per_node)";
  c.plan.ici =
      fill(axes_of(cfg, sweep, "ici", c.issues), c.plan.devices_per_slice, "ici", per_slice, cfg, c.issues);
  c.plan.dcn = fill(axes_of(cfg, sweep, "dcn", c.issues), c.plan.slices, "dcn",
                    cpu ? "slice(s)" : "slices (the nodes)", cfg, c.issues);
  return c;
}

void require_meshes_fit(const SuiteConfig& cfg, std::size_t nodes) {
  std::vector<ConfigIssue> all;
  for (const auto& run : cfg.runs)
    for (auto& i : check_mesh(cfg, run, nodes).issues) {
      i.message = "sweep " + run + ": " + i.message;
      if (std::find_if(all.begin(), all.end(),
                       [&](const ConfigIssue& x) { return x.pointer == i.pointer; }) == all.end())
        all.push_back(std::move(i));
    }
  if (!all.empty()) throw ConfigError(std::move(all));
}

}  // namespace cvs
