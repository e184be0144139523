#include "cvs/catalog/stage_names.hpp"

#include <cstring>

#include "cvs/catalog/metric_catalog.hpp"

namespace cvs::stage_names {

std::string test_suite_of(const char* stage) {
  const bool per_sweep = std::strcmp(stage, kTrainingRun) == 0 || std::strcmp(stage, kMetric) == 0 ||
                         std::strcmp(stage, kCheckpoint) == 0;
  return (per_sweep ? std::string(kSweepPrefix) : std::string()) + stage;
}

std::string filter_of(std::initializer_list<const char*> stages) {
  std::string f;
  for (const char* s : stages) f += (f.empty() ? "" : ":") + test_suite_of(s) + ".*";
  return f;
}

std::string speed_metric_tests() {
  std::string f;
  for (const auto& m : metric_catalog())
    if (m.speed && m.gated_by == GatedBy::TestMetric)
      f += (f.empty() ? "" : ":") + test_suite_of(kMetric) + ".check/*__" + std::string(m.name);
  return f;
}

}  // namespace cvs::stage_names
