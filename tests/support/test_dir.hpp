// A test's own folder, for the tests that run real processes (unit, e2e, integration).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace cvs::test {

// <temp dir>/<prefix>_<this process>_<the running test's name>, removed if an earlier run left it
// (the caller creates what it needs in it).
inline std::filesystem::path fresh_test_dir(const std::string& prefix) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + "_" + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace cvs::test
