// Where the tool finds what it ships and what it made: the same binary works from the build tree,
// from `cmake --install` or the .deb (bin/cvs, libexec/cvs-maxtext/, share/cvs-maxtext/), and no
// source path is compiled in.
//
//   data root ({cvs_root})  $CVS_ROOT, else the first share/cvs-maxtext above this binary's folder
//                           (installed: <prefix>/share/cvs-maxtext; the build tree has
//                           build/share/cvs-maxtext, a link to the source tree that configure makes)
//   venv ({cvs_venv})       $CVS_VENV, else <data root>/.venv where it exists (a source checkout
//                           after tools/setup), else ${XDG_DATA_HOME:-~/.local/share}/cvs-maxtext/venv
//                           (where `cvs setup-venv` makes it)
//   companion programs      the suites and setup-venv: libexec/cvs-maxtext/ beside bin/, or the
//                           build tree's suites/ and the source tree's tools/
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cvs {

inline constexpr const char* kPackageName = "cvs-maxtext";

// The folder of the running executable (/proc/self/exe).
std::filesystem::path self_dir();

// The first <ancestor>/share/cvs-maxtext holding configs/, from exe_dir up to four levels.
std::optional<std::filesystem::path> find_data_root(const std::filesystem::path& exe_dir);
// $CVS_ROOT, else find_data_root(self_dir()), else self_dir()/../share/cvs-maxtext (named in errors).
std::filesystem::path cvs_root();

// The venv a user's setup made. Inputs explicit for the tests; cvs_venv() reads the environment.
std::filesystem::path venv_for(const std::filesystem::path& data_root, const char* cvs_venv_env,
                               const char* xdg_data_home, const char* home);
std::filesystem::path default_venv(const char* xdg_data_home, const char* home);
std::filesystem::path cvs_venv();

// The MaxText lock the venv is built from: <data root>/requirements-maxtext-cpu.lock (installed)
// or <data root>/tools/requirements-maxtext-cpu.lock (the source tree).
std::filesystem::path maxtext_lock();

// A --config argument as a user gives it: an existing file as given; else the name of a shipped
// config as `cvs config list` prints it (with or without .json, or the spec's
// training/jaxmaxtext/NAME) -> its file under {cvs_root}/configs; else as given (the loader then
// says it does not exist).
std::string config_argument(const std::string& given);

// A program shipped beside this one (a suite, setup-venv), or nullopt with `looked` naming where.
std::optional<std::filesystem::path> companion_program(const std::string& name, std::string& looked);

}  // namespace cvs
