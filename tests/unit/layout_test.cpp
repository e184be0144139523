// Where the tool finds its data, its venv and its companion programs (lib/cvs/config/layout.hpp),
// on trees laid out as an install and as this build tree.
#include "cvs/config/layout.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_helpers.hpp"

namespace fs = std::filesystem;
using namespace cvs;

namespace {

struct TempTree {
  fs::path root = fs::temp_directory_path() / ("cvs_layout_" + std::to_string(::getpid()));
  TempTree() { fs::create_directories(root); }
  ~TempTree() { fs::remove_all(root); }
  fs::path dir(const std::string& rel) const {
    fs::create_directories(root / rel);
    return root / rel;
  }
};

}  // namespace

TEST(Layout, AnInstallFindsShareFromBinAndFromLibexec) {
  TempTree t;
  t.dir("usr/share/cvs-maxtext/configs");
  const auto want = fs::weakly_canonical(t.root / "usr/share/cvs-maxtext");
  EXPECT_EQ(find_data_root(t.dir("usr/bin")), want);
  EXPECT_EQ(find_data_root(t.dir("usr/libexec/cvs-maxtext")), want);
  // A share/cvs-maxtext without configs/ is not a data root; a tree without one has none.
  t.dir("opt/x/share/cvs-maxtext");
  EXPECT_FALSE(find_data_root(t.dir("opt/x/bin")).has_value());
}

TEST(Layout, TheBuildTreeFindsTheSourceTreeThroughItsLink) {
  // build/share/cvs-maxtext is the link configure makes; the binaries sit two levels below build/.
  EXPECT_EQ(find_data_root(fs::path(CVS_BINARY).parent_path()), fs::weakly_canonical(CVS_SOURCE_ROOT));
  EXPECT_EQ(find_data_root(fs::path(CVS_SUITE_SINGLE).parent_path()), fs::weakly_canonical(CVS_SOURCE_ROOT));
}

TEST(Layout, TheVenvIsTheEnvironmentsThenTheCheckoutsThenTheUsersDataHome) {
  TempTree t;
  const auto root = t.dir("share/cvs-maxtext");
  EXPECT_EQ(venv_for(root, "/opt/venv", "/x", "/home/a"), fs::path("/opt/venv"));
  EXPECT_EQ(venv_for(root, nullptr, "/x", "/home/a"), fs::path("/x/cvs-maxtext/venv"));
  EXPECT_EQ(venv_for(root, "", "", "/home/a"), fs::path("/home/a/.local/share/cvs-maxtext/venv"));
  // A checkout whose tools/setup made .venv/ uses it.
  fs::create_directories(root / ".venv/bin");
  std::ofstream(root / ".venv/bin/python3") << "";
  EXPECT_EQ(venv_for(root, nullptr, "/x", "/home/a"), root / ".venv");
  EXPECT_EQ(venv_for(root, "/opt/venv", "/x", "/home/a"), fs::path("/opt/venv"));
}

TEST(Layout, TheShippedCpuConfigsNameTheVenvByItsPlaceholder) {
  ::setenv("CVS_VENV", "/opt/cvs-venv", 1);
  const auto c = load_config(fs::path(CVS_SOURCE_ROOT) / "configs" / "cpu_jaxmaxtext_tiny_single.json");
  ::unsetenv("CVS_VENV");
  EXPECT_EQ(c.train_params.python, "/opt/cvs-venv/bin/python3");
  ASSERT_FALSE(c.train_params.train_script_paths.empty());
  EXPECT_EQ(c.train_params.train_script_paths[0].rfind("/opt/cvs-venv/lib/python3.", 0), 0u);
}

TEST(Layout, AnUnknownPlaceholderNamesTheBuiltInsAmongTheKnownOnes) {
  auto j = test::spec_example_untagged();
  j["train_params"]["maxtext_config"]["tokenizer_path"] = "{venv}/tok";
  const auto issues = test::issues_of(j);
  ASSERT_TRUE(
      test::has_issue(issues, "/train_params/maxtext_config/tokenizer_path", "unknown placeholder {venv}"));
  EXPECT_NE(issues[0].fix.find("use one of {cvs_root}, {cvs_venv}, {user-id}, "), std::string::npos)
      << issues[0].fix;
}

TEST(Layout, TheSuitesAreTheBuildTreesCompanions) {
  std::string looked;
  // This test binary's folder is not the suites'; companion_program still finds nothing named so.
  EXPECT_FALSE(companion_program("no-such-suite", looked).has_value());
  EXPECT_NE(looked.find("libexec/cvs-maxtext/no-such-suite"), std::string::npos) << looked;
  // The source tree's tools/ holds setup-venv.
  ::setenv("CVS_ROOT", CVS_SOURCE_ROOT, 1);
  const auto helper = companion_program("setup-venv", looked);
  ::unsetenv("CVS_ROOT");
  ASSERT_TRUE(helper.has_value()) << looked;
  EXPECT_EQ(helper->filename(), "setup-venv");
}
