#include "targets/process/capped_log.h"

#include <string>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

TEST(CappedLogTest, KeepsEverythingWhileItFits) {
  CappedLog log(8, 8);
  log.Append("hello\nwor", 9);
  log.Append("ld\n", 3);
  EXPECT_EQ(log.total_bytes(), 12u);
  EXPECT_EQ(log.kept_bytes(), 12u);
  EXPECT_EQ(log.Text(), "hello\nworld\n");
  EXPECT_EQ(log.TailLine(100), "hello | world");
  EXPECT_EQ(log.TailLine(6), "world");
}

TEST(CappedLogTest, KeepsTheHeadAndTheTailOfAFlood) {
  CappedLog log(4, 6);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    all += piece;
    log.Append(piece.data(), piece.size());
  }
  EXPECT_EQ(log.total_bytes(), all.size());
  EXPECT_EQ(log.kept_bytes(), 10u);
  const uint64_t dropped = all.size() - 10;
  EXPECT_EQ(log.Text(), all.substr(0, 4) + "\n[... " + std::to_string(dropped) +
                            " bytes dropped ...]\n" + all.substr(all.size() - 6));
  EXPECT_EQ(log.TailLine(3), all.substr(all.size() - 3));
}

TEST(CappedLogTest, OneHugeAppendKeepsItsEnds) {
  CappedLog log(3, 5);
  const std::string big = "abc" + std::string(1 << 20, 'x') + "12345";
  log.Append(big.data(), big.size());
  EXPECT_EQ(log.kept_bytes(), 8u);
  EXPECT_EQ(log.TailLine(100), "12345");  // never across the dropped bytes
}

}  // namespace
}  // namespace ckptspec
