#include "formats/pickle_memo.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ckptspec {
namespace {

// Keys from a few ranges: small ones (MEMOIZE's), near the positions, and far beyond them.
rc::Gen<uint64_t> MemoKey() {
  return rc::gen::oneOf(rc::gen::inRange<uint64_t>(0, 200), rc::gen::inRange<uint64_t>(0, 100000),
                        rc::gen::inRange<uint64_t>(0, uint64_t{INT64_MAX}));
}

RC_GTEST_PROP(MemoKeySet, HoldsWhatASetOfKeysHolds, ()) {
  const auto keys = *rc::gen::container<std::vector<uint64_t>>(MemoKey());
  MemoKeySet set;
  std::set<uint64_t> model;
  for (uint64_t key : keys) {
    // Half of the stores are MEMOIZE's: at len(memo).
    const uint64_t k = *rc::gen::arbitrary<bool>() ? set.size() : key;
    const bool is_new = model.insert(k).second;
    const MemoKeySet::Insertion got = set.Insert(k);
    RC_ASSERT((got != MemoKeySet::Insertion::kReplaced) == is_new);
    RC_ASSERT(set.size() == model.size());
  }
  for (uint64_t key : keys) RC_ASSERT(set.Contains(key) == (model.count(key) != 0));
  RC_ASSERT(!set.Contains(uint64_t{INT64_MAX} + 1) || model.count(uint64_t{INT64_MAX} + 1) != 0);
}

RC_GTEST_PROP(MemoReadSet, NumbersEveryKeyReadOnceAcrossParts, ()) {
  const auto reads = *rc::gen::container<std::vector<std::pair<uint64_t, size_t>>>(
      rc::gen::pair(MemoKey(), rc::gen::inRange<size_t>(0, 200000)));
  const size_t split = *rc::gen::inRange<size_t>(0, reads.size() + 1);
  MemoReadSet first, second;
  std::set<uint64_t> model;
  for (size_t i = 0; i < reads.size(); ++i) {
    (i < split ? first : second).Add(reads[i].first, reads[i].second);
    model.insert(reads[i].first);
  }
  first.Merge(second);
  first.Finish();
  RC_ASSERT(first.size() == model.size());
  std::set<int64_t> slots;
  for (uint64_t key : model) {
    const int64_t slot = first.Slot(key);
    RC_ASSERT(slot >= 0 && static_cast<uint64_t>(slot) < model.size());
    slots.insert(slot);
  }
  RC_ASSERT(slots.size() == model.size());  // one slot each
  const uint64_t absent = *MemoKey();
  if (model.count(absent) == 0) RC_ASSERT(first.Slot(absent) == -1);
}

TEST(ParseMemoKeyText, ReadsAsPythonsIntDoes) {
  const std::map<std::string, uint64_t> accepted = {
      {"0", 0},
      {"17", 17},
      {" 17\t", 17},
      {"+17", 17},
      {"-0", 0},
      {"1_000", 1000},
      {"0007", 7},
      {std::string("5\0junk", 6), 5},
      {"9223372036854775807", uint64_t{INT64_MAX}},
  };
  for (const auto& [text, want] : accepted) {
    uint64_t key = 0;
    EXPECT_TRUE(ParseMemoKeyText(text, &key)) << text;
    EXPECT_EQ(key, want) << text;
  }
  for (const std::string& text :
       {std::string(""), std::string(" "), std::string("-1"), std::string("1 2"), std::string("_1"),
        std::string("1_"), std::string("1__2"), std::string("0x10"),
        std::string("9223372036854775808"),
        std::string("\x1c"
                    "1"),
        std::string("+-1"), std::string(4301, '0'),
        std::string("\0"
                    "1",
                    2)}) {
    uint64_t key = 0;
    EXPECT_FALSE(ParseMemoKeyText(text, &key)) << text;
  }
}

}  // namespace
}  // namespace ckptspec
