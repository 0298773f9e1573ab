#include "formats/pickle_text.h"

#include <gtest/gtest.h>

#include <string>

namespace ckptspec {
namespace {

using namespace std::string_literals;

// As CPython's UTF-8 decoder with "surrogatepass" (b.decode("utf-8", "surrogatepass")).
TEST(IsPythonUtf8, AcceptsWhatCPythonDecodes) {
  for (const std::string& ok :
       {""s, "abc"s, "\0"s, "\xc3\xa9"s, "\xe2\x82\xac"s, "\xf0\x9f\x98\x80"s, "\xf4\x8f\xbf\xbf"s,
        "\xed\xa0\x80"s, "\xed\xbf\xbf"s}) {
    EXPECT_TRUE(IsPythonUtf8(ok)) << ok;
  }
  for (const std::string& bad :
       {"\x80"s, "\xc0\x80"s, "\xc1\xbf"s, "\xe0\x80\x80"s, "\xf0\x80\x80\x80"s,
        "\xf4\x90\x80\x80"s, "\xf5\x80\x80\x80"s, "\xc3"s, "\xe2\x82"s, "\xc3\x28"s, "\xff"s}) {
    EXPECT_FALSE(IsPythonUtf8(bad)) << bad;
  }
}

TEST(IsAscii, IsBytesBelow128) {
  EXPECT_TRUE(IsAscii("plain\x7f"));
  EXPECT_FALSE(IsAscii("\xc3\xa9"));
}

}  // namespace
}  // namespace ckptspec
