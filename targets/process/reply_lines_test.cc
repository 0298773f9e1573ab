#include "targets/process/reply_lines.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace ckptspec {
namespace {

constexpr size_t kPiece = 64 << 10;  // what one read of a rank's stdout returns at most

// Feeds `bytes` in pieces of `piece` bytes, taking each line as soon as it is complete.
std::vector<std::string> LinesOf(const std::string& bytes, size_t piece, ReplyLines* reader) {
  std::vector<std::string> lines;
  std::string line;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    reader->Append(bytes.data() + at, std::min(piece, bytes.size() - at));
    while (reader->TakeLine(&line)) lines.push_back(line);
  }
  return lines;
}

TEST(ReplyLines, ALongLineSplitIntoManyReadsIsReadOnceWhole) {
  std::string reply = "{\"id\":7,\"rank\":0,\"ok\":true,\"pad\":\"";
  while (reply.size() < (size_t{12} << 20)) reply += "abcdefghijklmnopqrstuvwxyz0123456789";
  reply += "\"}";
  ReplyLines reader(size_t{256} << 20);
  const std::vector<std::string> lines = LinesOf(reply + "\n", kPiece, &reader);
  ASSERT_EQ(lines.size(), 1u) << "a line of " << reply.size() << " bytes in " << kPiece
                              << "-byte reads";
  EXPECT_TRUE(lines[0] == reply) << "the line read differs from the line written";
  EXPECT_TRUE(reader.empty());
  EXPECT_FALSE(reader.too_long());
}

TEST(ReplyLines, ALineOverTheLimitIsTooLongOnlyOnceItPassesIt) {
  ReplyLines reader(1000);
  std::string line;
  const std::string piece(300, 'x');
  for (int i = 0; i < 3; ++i) {
    reader.Append(piece.data(), piece.size());
    ASSERT_FALSE(reader.TakeLine(&line));
    EXPECT_FALSE(reader.too_long()) << "after " << (i + 1) * 300 << " bytes";
  }
  reader.Append(piece.data(), piece.size());
  ASSERT_FALSE(reader.TakeLine(&line));
  EXPECT_TRUE(reader.too_long()) << "after 1200 bytes without a newline, the limit 1000";
  EXPECT_EQ(reader.pending().size(), 1200u);
}

TEST(ReplyLines, WhatFollowsALineStaysPending) {
  ReplyLines reader(100);
  const std::string bytes = "{\"a\":1}\n{\"b\"";
  reader.Append(bytes.data(), bytes.size());
  std::string line;
  ASSERT_TRUE(reader.TakeLine(&line));
  EXPECT_EQ(line, "{\"a\":1}");
  EXPECT_FALSE(reader.empty());
  EXPECT_EQ(reader.pending(), "{\"b\"");
  EXPECT_FALSE(reader.TakeLine(&line));
  EXPECT_EQ(line, "{\"a\":1}") << "left alone while no newline has arrived";
}

// However the reads split the bytes, the lines are those between the newlines, each once, and
// what follows the last newline is pending.
RC_GTEST_PROP(ReplyLines, TheLinesDoNotDependOnHowTheReadsSplitThem,
              (const std::vector<std::string>& words, const std::vector<size_t>& cuts)) {
  std::string bytes;
  for (const std::string& w : words) bytes += w + (w.size() % 3 == 0 ? "\n" : "");
  std::vector<std::string> expected;
  size_t begin = 0;
  for (size_t nl; (nl = bytes.find('\n', begin)) != std::string::npos; begin = nl + 1) {
    expected.push_back(bytes.substr(begin, nl - begin));
  }
  std::vector<size_t> at;
  for (size_t c : cuts) at.push_back(bytes.empty() ? 0 : c % (bytes.size() + 1));
  at.push_back(0);
  at.push_back(bytes.size());
  std::sort(at.begin(), at.end());
  ReplyLines reader(bytes.size());
  std::vector<std::string> got;
  std::string line;
  for (size_t i = 0; i + 1 < at.size(); ++i) {
    reader.Append(bytes.data() + at[i], at[i + 1] - at[i]);
    while (reader.TakeLine(&line)) got.push_back(line);
  }
  RC_ASSERT(got == expected);
  RC_ASSERT(reader.pending() == std::string_view(bytes).substr(begin));
  RC_ASSERT(!reader.too_long());
}

}  // namespace
}  // namespace ckptspec
