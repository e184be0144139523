// The stages of the jaxmaxtext suites, in the order they run. Declarative: each test hands its
// stage to fixtures/ and reports the StageResult. Compiled into both suite executables;
// CVS_DISTRIBUTED adds test_setup_rdma.
#include <gtest/gtest.h>

#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/config/sweep.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/session.hpp"
#include "cvs/stages.hpp"

using cvs::fixtures::Session;
using cvs::fixtures::StageResult;

namespace {

Session& S() {
  return Session::get();
}

// Runs a stage; an exception escaping it is an ERROR of that stage and, like a failed setup,
// closes the gate for every later stage.
template <typename Stage>
StageResult run_stage(Stage&& stage) {
  try {
    return stage();
  } catch (const std::exception& e) {
    return S().gate().stage_threw(e.what());
  }
}

void report(const StageResult& r) {
  for (const auto& [k, v] : r.properties) ::testing::Test::RecordProperty(k, v);
  if (!r.message.empty()) ::testing::Test::RecordProperty("summary", r.message);
  switch (r.status) {
    case StageResult::Status::Skip:
      GTEST_SKIP() << r.message;
    case StageResult::Status::Fail:
      FAIL() << r.message;
    case StageResult::Status::Error:  // JUnit <error> (rewritten after the run), outcome ERROR
      ::testing::Test::RecordProperty("outcome", cvs::to_string(cvs::Outcome::Error));
      FAIL() << "ERROR: " << r.message;
    case StageResult::Status::Pass:
      break;
  }
}

// Sweep parameters print as the canonical key (gtest's XML value_param); names are gtest-safe.
struct Sweep {
  std::string key;
};
void PrintTo(const Sweep& s, std::ostream* os) {
  *os << s.key;
}
struct SweepMetric {
  std::string key;
  std::string metric;
};
void PrintTo(const SweepMetric& s, std::ostream* os) {
  *os << s.key << " training." << s.metric;
}

std::vector<Sweep> runs() {
  std::vector<Sweep> v;
  for (const auto& k : S().cfg().runs) v.push_back({k});
  return v;
}
std::vector<SweepMetric> run_metrics() {
  std::vector<SweepMetric> v;
  for (const auto& k : S().cfg().runs)
    for (const auto& m : cvs::metric_catalog())
      if (m.gated_by == cvs::GatedBy::TestMetric) v.push_back({k, std::string(m.name)});
  return v;
}
std::string sweep_name(const ::testing::TestParamInfo<Sweep>& i) {
  return cvs::sweep_test_name(i.param.key);
}
std::string metric_name(const ::testing::TestParamInfo<SweepMetric>& i) {
  return cvs::sweep_test_name(i.param.key) + "__" + i.param.metric;
}

}  // namespace

// The Environment (fixtures/cvs/environment.cpp) ran the setup before any test: this test
// reports what it found.
TEST(test_setup, containers_and_devices) {
  S().gate().setup_reported();
  if (!S().setup_result()) FAIL() << "ERROR: the suite's Environment did not run the setup";
  report(*S().setup_result());
}

#ifdef CVS_DISTRIBUTED
TEST(test_setup_rdma, devices_and_interfaces) {
  report(run_stage([] { return cvs::fixtures::stage_setup_rdma(S()); }));
}
#endif

TEST(test_smoke, bf16_smoke) {
  report(run_stage([] { return cvs::fixtures::stage_smoke(S()); }));
}

class test_training_run : public ::testing::TestWithParam<Sweep> {};
TEST_P(test_training_run, run) {
  RecordProperty(cvs::StageRecord::kSweepKeyProperty, GetParam().key);
  report(run_stage([&] { return cvs::fixtures::stage_training_run(S(), GetParam().key); }));
}
INSTANTIATE_TEST_SUITE_P(sweep, test_training_run, ::testing::ValuesIn(runs()), sweep_name);

class test_metric : public ::testing::TestWithParam<SweepMetric> {};
TEST_P(test_metric, check) {
  RecordProperty(cvs::StageRecord::kSweepKeyProperty, GetParam().key);
  report(run_stage([&] { return cvs::fixtures::stage_metric(S(), GetParam().key, GetParam().metric); }));
}
INSTANTIATE_TEST_SUITE_P(sweep, test_metric, ::testing::ValuesIn(run_metrics()), metric_name);

class checkpoint_resume : public ::testing::TestWithParam<Sweep> {};
TEST_P(checkpoint_resume, save_and_resume) {
  RecordProperty(cvs::StageRecord::kSweepKeyProperty, GetParam().key);
  report(run_stage([&] { return cvs::fixtures::stage_checkpoint_resume(S(), GetParam().key); }));
}
INSTANTIATE_TEST_SUITE_P(sweep, checkpoint_resume,
                         ::testing::Values(Sweep{cvs::fixtures::checkpoint_sweep(S().cfg())}), sweep_name);
