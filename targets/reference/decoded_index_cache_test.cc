// DecodedIndexCache: a kept index is found only by the same path, text and limits, and the
// oldest are dropped past the bounds.
#include "targets/reference/decoded_index_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace ckptspec {
namespace {

DecodedIndex Index(const std::string& path, const std::string& text, int64_t iteration) {
  DecodedIndex index;
  index.path = path;
  index.text = text;
  index.metadata.iteration = iteration;
  return index;
}

TEST(DecodedIndexCache, FindsOnlyTheSamePathTextAndLimits) {
  DecodedIndexCache cache;
  cache.Keep(Index("/a/metadata.json", "text a", 7));
  CheckpointMetadata m;
  EXPECT_TRUE(cache.Find("/a/metadata.json", "text a", JsonLimits(), &m));
  EXPECT_EQ(m.iteration, 7);
  EXPECT_FALSE(cache.Find("/b/metadata.json", "text a", JsonLimits(), &m));
  EXPECT_FALSE(cache.Find("/a/metadata.json", "text A", JsonLimits(), &m));
  JsonLimits shallow;
  shallow.max_depth = 8;
  EXPECT_FALSE(cache.Find("/a/metadata.json", "text a", shallow, &m));
  // A newer index at the same path replaces the older one.
  cache.Keep(Index("/a/metadata.json", "text b", 8));
  EXPECT_FALSE(cache.Find("/a/metadata.json", "text a", JsonLimits(), &m));
  EXPECT_TRUE(cache.Find("/a/metadata.json", "text b", JsonLimits(), &m));
  EXPECT_EQ(m.iteration, 8);
}

TEST(DecodedIndexCache, DropsTheOldestPastItsBounds) {
  DecodedIndexCache cache;
  CheckpointMetadata m;
  for (size_t i = 0; i <= DecodedIndexCache::kMaxEntries; ++i) {
    cache.Keep(Index("/" + std::to_string(i), "t", static_cast<int64_t>(i)));
  }
  EXPECT_FALSE(cache.Find("/0", "t", JsonLimits(), &m));
  EXPECT_TRUE(cache.Find("/1", "t", JsonLimits(), &m));
  const std::string big(DecodedIndexCache::kMaxTextBytes, 'x');
  for (size_t i = 0; i < DecodedIndexCache::kMaxTotalTextBytes / big.size(); ++i) {
    cache.Keep(Index("/big" + std::to_string(i), big, 0));
  }
  EXPECT_TRUE(cache.Find("/big0", big, JsonLimits(), &m));
  EXPECT_FALSE(cache.Find("/1", "t", JsonLimits(), &m));  // 8 texts of 4 MiB leave no room
  cache.Keep(Index("/big-last", big, 0));
  EXPECT_FALSE(cache.Find("/big0", big, JsonLimits(), &m));
  cache.Keep(Index("/too-big", big + "x", 0));
  EXPECT_FALSE(cache.Find("/too-big", big + "x", JsonLimits(), &m));
}

}  // namespace
}  // namespace ckptspec
