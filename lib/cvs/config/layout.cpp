#include "cvs/config/layout.hpp"

#include <unistd.h>

#include <cstdlib>

namespace fs = std::filesystem;

namespace cvs {

fs::path self_dir() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

std::optional<fs::path> find_data_root(const fs::path& exe_dir) {
  fs::path dir = exe_dir;
  for (int up = 0; up <= 4 && !dir.empty(); ++up) {
    const auto share = dir / "share" / kPackageName;
    std::error_code ec;
    if (fs::is_directory(share / "configs", ec)) return fs::weakly_canonical(share, ec);
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

fs::path cvs_root() {
  if (const char* root = std::getenv("CVS_ROOT"); root && *root) return root;
  const auto here = self_dir();
  if (auto found = find_data_root(here)) return *found;
  return (here.parent_path() / "share" / kPackageName).lexically_normal();
}

std::string config_argument(const std::string& given) {
  std::error_code ec;
  if (given.empty() || fs::is_regular_file(given, ec)) return given;
  std::string name = given;
  const std::string spec_prefix = "training/jaxmaxtext/";
  if (name.rfind(spec_prefix, 0) == 0) name = name.substr(spec_prefix.size());
  if (name.find('/') != std::string::npos) return given;  // a path: never a name
  if (name.size() < 5 || name.compare(name.size() - 5, 5, ".json") != 0) name += ".json";
  const fs::path shipped = cvs_root() / "configs" / name;
  return fs::is_regular_file(shipped, ec) ? shipped.string() : given;
}

fs::path default_venv(const char* xdg_data_home, const char* home) {
  const fs::path base = xdg_data_home && *xdg_data_home
                            ? fs::path(xdg_data_home)
                            : fs::path(home && *home ? home : "/tmp") / ".local/share";
  return base / kPackageName / "venv";
}

fs::path venv_for(const fs::path& data_root, const char* cvs_venv_env, const char* xdg_data_home,
                  const char* home) {
  if (cvs_venv_env && *cvs_venv_env) return cvs_venv_env;
  std::error_code ec;
  if (fs::exists(data_root / ".venv" / "bin" / "python3", ec)) return data_root / ".venv";
  return default_venv(xdg_data_home, home);
}

fs::path cvs_venv() {
  return venv_for(cvs_root(), std::getenv("CVS_VENV"), std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
}

fs::path maxtext_lock() {
  const auto root = cvs_root();
  std::error_code ec;
  const auto installed = root / "requirements-maxtext-cpu.lock";
  return fs::exists(installed, ec) ? installed : root / "tools" / "requirements-maxtext-cpu.lock";
}

std::optional<fs::path> companion_program(const std::string& name, std::string& looked) {
  const auto here = self_dir();
  const std::vector<fs::path> candidates = {
      here / name,                                           // libexec/cvs-maxtext/ itself, build/suites/
      here.parent_path() / "libexec" / kPackageName / name,  // bin/ of an install
      here.parent_path().parent_path() / "suites" / name,    // build/tools/cvs/ of the build tree
      cvs_root() / "tools" / name,                           // the source tree's tools/
  };
  looked.clear();
  for (const auto& c : candidates) {
    std::error_code ec;
    const auto p = c.lexically_normal();
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p;
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  return std::nullopt;
}

}  // namespace cvs
