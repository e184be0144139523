// The one reader of the user's files (config/json_reader.hpp): each key is named once, by the
// read that takes it, and every other key of the object is reported with a "did you mean".
#include <gtest/gtest.h>

#include "cvs/config/cluster.hpp"
#include "cvs/config/config.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/json_fields.hpp"
#include "cvs/config/json_reader.hpp"
#include "test_helpers.hpp"

using cvs::test::has_issue;
using cvs::test::issues_of;
using cvs::test::spec_example_untagged;
using nlohmann::ordered_json;

namespace {

std::vector<cvs::ConfigIssue> read_with(const ordered_json& obj,
                                        const std::function<void(cvs::JsonReader&)>& read) {
  cvs::IssueList issues("f.json");
  cvs::JsonReader r(issues, obj, "/block");
  read(r);
  r.finish();
  return issues.issues();
}

}  // namespace

TEST(JsonReader, AKeyAReadNamesIsKnownAndEveryOtherIsReported) {
  const auto obj = ordered_json::parse(R"({"steps": 3, "name": "x", "_note": "a comment", "stesp": 4})");
  int steps = 0;
  std::string name;
  const auto issues = read_with(obj, [&](cvs::JsonReader& r) {
    r.integer("steps", steps, 1);
    r.str("name", name);
  });
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(name, "x");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].pointer, "/block/stesp");
  EXPECT_EQ(issues[0].message, "unknown key 'stesp' in block");
  EXPECT_EQ(issues[0].fix, "did you mean 'steps'? (prefix with '_' to keep it as a comment)");
}

TEST(JsonReader, AValueOfTheWrongKindIsOneIssueAtItsKeyNeverAlsoAnUnknownKey) {
  const auto obj = ordered_json::parse(R"({"steps": "3", "port": 70000, "mode": "fast", "on": "yes"})");
  int steps = 7, port = 22;
  std::string mode = "fail";
  bool on = false;
  const auto issues = read_with(obj, [&](cvs::JsonReader& r) {
    r.integer("steps", steps, 1);
    r.integer("port", port, 1, false, 65535);
    r.choice("mode", mode, {"fail", "pass", "extend"}, "use fail");
    r.boolean("on", on);
  });
  ASSERT_EQ(issues.size(), 4u);
  EXPECT_TRUE(has_issue(issues, "/block/steps", "must be an integer, found a string \"3\""));
  EXPECT_TRUE(has_issue(issues, "/block/port", "'port' is 70000, must be <= 65535"));
  EXPECT_TRUE(has_issue(issues, "/block/mode", "mode 'fast' is not fail, pass or extend"));
  EXPECT_TRUE(has_issue(issues, "/block/on", "must be true or false"));
  // Each bad value leaves the field as it was: the default stands, never half a value.
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(port, 22);
  EXPECT_EQ(mode, "fail");
}

TEST(JsonReader, ABlockIsReadByItsFromJsonAndNamedByItsPointer) {
  const auto obj = ordered_json::parse(R"({"smoke": {"steps": 2, "enabeld": false}})");
  cvs::IssueList issues("f.json");
  cvs::JsonReader root(issues, obj, "");
  cvs::Smoke smoke;
  EXPECT_TRUE(root.block("smoke", smoke));
  root.finish();
  EXPECT_EQ(smoke.steps, 2);
  ASSERT_EQ(issues.issues().size(), 1u);
  EXPECT_EQ(issues.issues()[0].message, "unknown key 'enabeld' in smoke");
  EXPECT_EQ(issues.issues()[0].fix, "did you mean 'enabled'? (prefix with '_' to keep it as a comment)");
}

// Every block of the config reads through the reader: a misspelled key of each block gets the
// key it meant, at its pointer.
TEST(JsonReader, EveryConfigBlockSuggestsTheKeyAMisspellingMeant) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"/container", "imag", "image"},
      {"/container/runtime", "nmae", "name"},
      {"/container/runtime/args", "shm_size", "shm-size"},
      {"/train_params", "maxtext_brnch", "maxtext_branch"},
      {"/scaling_baseline", "num_node", "num_nodes"},
      {"/convergence", "target_vlaue", "target_value"},
      {"/loss_curve", "max_slop", "max_slope"},
      {"/statistics", "confidense", "confidence"},
      {"/smoke", "stpes", "steps"},
      {"/checkpoint_resume", "sweeep", "sweep"},
      {"", "gpu_nme", "gpu_name"},
  };
  for (const auto& [block, typo, meant] : cases) {
    auto j = spec_example_untagged();
    auto& target = block.empty() ? j : j[ordered_json::json_pointer(block)];
    if (!target.is_object()) target = ordered_json::object();
    target[typo] = 1;
    bool suggested = false;
    for (const auto& i : issues_of(j))
      suggested |= i.pointer == block + "/" + typo &&
                   i.fix == "did you mean '" + meant + "'? (prefix with '_' to keep it as a comment)";
    EXPECT_TRUE(suggested) << block << "/" << typo;
  }
}

TEST(JsonReader, TheClusterFileSaysAPortsRangeAndASchedulersWords) {
  auto issues_of_cluster = [](const std::string& text) {
    try {
      cvs::parse_cluster(text, "c.json");
    } catch (const cvs::ConfigError& e) {
      return e.issues();
    }
    return std::vector<cvs::ConfigIssue>{};
  };
  EXPECT_TRUE(has_issue(issues_of_cluster(R"({"nodes": [{"host": "a", "port": 70000}]})"), "/nodes/0/port",
                        "must be <= 65535"));
  EXPECT_TRUE(has_issue(issues_of_cluster(R"({"scheduler": "pbs", "nodes": ["a"]})"), "/scheduler",
                        "scheduler 'pbs' is not slurm"));
  // With scheduler slurm, the keys of a listed cluster are not unknown: the allocation decides them.
  const auto slurm = issues_of_cluster(R"({"scheduler": "slurm", "slurm": {"nodes": 2}, "head": "x"})");
  EXPECT_TRUE(slurm.empty()) << slurm.size()
                             << " issue(s), first: " << (slurm.empty() ? "" : slurm[0].to_string());
}

// One field list drives the writer and the reader (config/json_fields.hpp): a round trip keeps every
// member; an optional field absent keeps the struct's default and an optional figure with no value
// is left out; a required field missing or mistyped is a ConfigError at its JSON pointer.
namespace {
struct Probe {
  std::string name;
  long long steps = 0;
  bool ok = false;
  double seconds = 0;
  std::vector<std::string> args;
  std::optional<double> figure, spare;
  double confidence = 0.95;
};
constexpr auto kProbeFields = std::make_tuple(
    cvs::field("name", &Probe::name), cvs::field("steps", &Probe::steps), cvs::field("ok", &Probe::ok),
    cvs::field("seconds", &Probe::seconds), cvs::field("args", &Probe::args),
    cvs::field("figure", &Probe::figure), cvs::optional_field("spare", &Probe::spare),
    cvs::optional_field("confidence", &Probe::confidence));
}  // namespace

TEST(JsonFields, OneListWritesAndReadsARecord) {
  const Probe p{"n1", 60, true, 1.5, {"--x", "1"}, std::nullopt, std::nullopt, 0.9};
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  cvs::write_fields(j, p, kProbeFields);
  EXPECT_TRUE(j["figure"].is_null()) << "a required figure with no value is null";
  EXPECT_FALSE(j.contains("spare")) << "an optional one is left out";
  const std::string file = "probe.json";
  Probe back;
  cvs::read_fields(cvs::JsonIn(j, "/probe", file, "write it again"), back, kProbeFields);
  EXPECT_EQ(back.name, "n1");
  EXPECT_EQ(back.steps, 60);
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.args, (std::vector<std::string>{"--x", "1"}));
  EXPECT_FALSE(back.figure);
  EXPECT_DOUBLE_EQ(back.confidence, 0.9);

  j.erase("confidence");  // an older record: the default
  Probe old;
  cvs::read_fields(cvs::JsonIn(j, "/probe", file, "write it again"), old, kProbeFields);
  EXPECT_DOUBLE_EQ(old.confidence, 0.95);

  const auto refused_at = [&](const std::string& pointer) {
    try {
      Probe bad;
      cvs::read_fields(cvs::JsonIn(j, "/probe", file, "write it again"), bad, kProbeFields);
      return std::string("read");
    } catch (const cvs::ConfigError& e) {
      return std::string(e.what()).find(pointer) != std::string::npos ? std::string() : std::string(e.what());
    }
  };
  j["steps"] = "sixty";
  EXPECT_EQ(refused_at("/probe/steps"), "") << "a string as steps";
  j.erase("steps");
  EXPECT_EQ(refused_at("/probe/steps"), "") << "a record without its required steps";
}
