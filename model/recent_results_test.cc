#include "model/recent_results.h"

#include <gtest/gtest.h>

#include <memory>

namespace ckptspec {
namespace {

std::shared_ptr<const int> Find(RecentResults<int>& kept, int value) {
  return kept.Find([value](int v) { return v == value; });
}

TEST(RecentResults, FindsWhatItKeptAndNothingElse) {
  RecentResults<int> kept(2);
  EXPECT_EQ(Find(kept, 1), nullptr);
  auto one = std::make_shared<const int>(1);
  kept.Keep(one);
  EXPECT_EQ(Find(kept, 1), one) << "the kept value itself, shared";
  EXPECT_EQ(Find(kept, 2), nullptr);
}

TEST(RecentResults, DropsTheLeastRecentlyKeptOrFound) {
  RecentResults<int> kept(2);
  kept.Keep(std::make_shared<const int>(1));
  kept.Keep(std::make_shared<const int>(2));
  ASSERT_NE(Find(kept, 1), nullptr);  // 1 is now the most recent
  kept.Keep(std::make_shared<const int>(3));
  EXPECT_NE(Find(kept, 1), nullptr);
  EXPECT_EQ(Find(kept, 2), nullptr) << "2 was the least recent";
  EXPECT_NE(Find(kept, 3), nullptr);
}

TEST(RecentResults, AFoundValueOutlivesItsDropping) {
  RecentResults<int> kept(1);
  kept.Keep(std::make_shared<const int>(7));
  const std::shared_ptr<const int> found = Find(kept, 7);
  kept.Keep(std::make_shared<const int>(8));
  EXPECT_EQ(Find(kept, 7), nullptr);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(*found, 7);
}

}  // namespace
}  // namespace ckptspec
