// Plain text helpers (lib/cvs/base/text.hpp) that error messages and tool output pass through.
#include "cvs/base/text.hpp"

#include <gtest/gtest.h>

TEST(Text, LineEndsAtTheEndAreDroppedAndOnlyThose) {
  EXPECT_EQ(cvs::without_line_ends("could not connect\r\n\n"), "could not connect");
  EXPECT_EQ(cvs::without_line_ends("a\nb \n"), "a\nb ") << "inner lines and spaces stay";
  EXPECT_EQ(cvs::without_line_ends("\n\r\n"), "");
  EXPECT_EQ(cvs::without_line_ends(""), "");
}

TEST(Text, TheLastLineIsTheLastWithTextBeforeTheEnds) {
  EXPECT_EQ(cvs::last_line("Warning: Permanently added\r\nssh: connect to host port 22: refused\r\n"),
            "ssh: connect to host port 22: refused");
  EXPECT_EQ(cvs::last_line("one line"), "one line");
  EXPECT_EQ(cvs::last_line("first\n\n"), "first");
  EXPECT_EQ(cvs::last_line(""), "");
}
