#include "test_helpers.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace cvs::test {

std::filesystem::path data(const std::string& rel) {
  return std::filesystem::path(CVS_TEST_DATA) / rel;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_json(const std::filesystem::path& p) {
  return nlohmann::ordered_json::parse(read_file(p));
}

nlohmann::ordered_json spec_example_untagged() {
  auto j = read_json(data("configs/mi3xx_jaxmaxtext_llama-3.3-70b_distributed.json"));
  j["threshold_json"] = "mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json";
  j["container"]["image"] = "rocm/jax-training:maxtext-v26.4";
  auto& env = j["container"]["env"];
  env["NCCL_IB_HCA"] = "rdma0,rdma1";
  env["NCCL_SOCKET_IFNAME"] = "eno1";
  env["GLOO_SOCKET_IFNAME"] = "eno1";
  env["NCCL_IB_GID_INDEX"] = "3";
  return j;
}

SuiteConfig load_json(const nlohmann::ordered_json& j, const std::string& name) {
  return load_config_text(j.dump(), data("configs/" + name),
                          {.user = "alice", .require_threshold_file = true});
}

std::vector<ConfigIssue> issues_of(const nlohmann::ordered_json& j, const std::string& name) {
  try {
    (void)load_json(j, name);
  } catch (const ConfigError& e) {
    return e.issues();
  }
  return {};
}

::testing::AssertionResult has_issue(const std::vector<ConfigIssue>& issues, const std::string& pointer,
                                     const std::string& needle) {
  for (const auto& i : issues)
    if (i.pointer == pointer && i.message.find(needle) != std::string::npos) {
      if (i.fix.empty()) return ::testing::AssertionFailure() << "issue at " << pointer << " has no fix";
      if (i.file.empty()) return ::testing::AssertionFailure() << "issue at " << pointer << " names no file";
      return ::testing::AssertionSuccess();
    }
  auto f = ::testing::AssertionFailure();
  f << "no issue at '" << pointer << "' containing '" << needle << "'; got " << issues.size() << ":";
  for (const auto& i : issues) f << "\n  " << i.to_string();
  return f;
}

Proc run_command(const std::string& cmd) {
  Proc p;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return p;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), f)) p.out.append(buf.data(), n);
  int status = pclose(f);
  p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return p;
}

ThresholdSpec threshold_spec(const std::string& metric, ThresholdKind kind, double value) {
  ThresholdSpec s;
  s.metric = metric;
  s.kind = kind;
  s.value = value;
  return s;
}

::testing::AssertionResult valid_junit(const std::string& xml) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("cvs-junit-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()) + ".xml");
  {
    std::ofstream out(file);
    out << xml;
  }
  const auto p = run_command("xmllint --noout --schema '" + data("junit/junit-10.xsd").string() + "' '" +
                             file.string() + "'");
  std::filesystem::remove(file);
  if (p.exit_code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "xmllint against junit-10.xsd: exit " << p.exit_code << "\n"
                                       << p.out << "\n"
                                       << xml;
}

std::string joined(const std::vector<std::string>& v) {
  std::string t;
  for (const auto& w : v) t += w + "\n";
  return t;
}

void names_only_gpu5(const std::string& words, const std::string& what) {
  EXPECT_NE(words.find("GPU 5"), std::string::npos) << what << ": " << words;
  for (int i = 0; i < 8; ++i) {
    if (i == 5) continue;
    EXPECT_EQ(words.find("GPU " + std::to_string(i) + " "), std::string::npos) << what << ": " << words;
  }
}

}  // namespace cvs::test
