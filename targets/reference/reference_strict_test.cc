// Strict handling of unexpected and missing keys, every mode (P15, docs/SEMANTICS.md §4).
#include <gtest/gtest.h>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::LoadInto;
using testing_util::MemHarness;

ShardedTensor Tensor(const std::string& key, int64_t rows, int64_t rank, int64_t world) {
  ShardedTensor t;
  t.spec.key = key;
  t.spec.dtype = DType::kInt32;
  t.spec.global_shape = {rows * world};
  t.spec.global_offset = {rows * rank};
  t.spec.local_shape = {rows};
  t.data.resize(rows * 4);
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = static_cast<uint8_t>(i + 16 * rank + key.size());
  return t;
}

ShardedObject Object(const std::string& key, int64_t rank, int64_t world) {
  ShardedObject o;
  o.spec.key = key;
  o.spec.global_shape = {world};
  o.spec.global_offset = {rank};
  o.data = key + "@" + std::to_string(rank);
  return o;
}

// The checkpoint holds tensors "w", "b" and object "rng_state" from two ranks.
std::vector<ShardedStateDict> Saved() {
  std::vector<ShardedStateDict> dicts(2);
  for (int64_t r = 0; r < 2; ++r) {
    dicts[r].tensors = {Tensor("w", 3, r, 2), Tensor("b", 2, r, 2)};
    dicts[r].objects = {Object("rng_state", r, 2)};
  }
  return dicts;
}

// Rank 0 asks for "w" and the absent tensor "extra_t"; rank 1 for "w", "b" and the absent object
// "extra_o". So unexpected = {0: [extra_t], 1: [extra_o]} and missing = [rng_state].
std::vector<ShardedStateDict> WithUnexpected() {
  std::vector<ShardedStateDict> t(2);
  for (int64_t r = 0; r < 2; ++r)
    t[r].tensors.push_back(TemplateOf({{Tensor("w", 3, r, 2)}, {}, {}}).tensors[0]);
  t[0].tensors.push_back(TemplateOf({{Tensor("extra_t", 1, 0, 2)}, {}, {}}).tensors[0]);
  t[1].tensors.push_back(TemplateOf({{Tensor("b", 2, 1, 2)}, {}, {}}).tensors[0]);
  t[1].objects.push_back(ShardedObject{Object("extra_o", 1, 2).spec, ""});
  return t;
}

// Everything requested exists; "rng_state" is still requested by no rank.
std::vector<ShardedStateDict> OnlyMissing() {
  auto t = WithUnexpected();
  t[0].tensors.pop_back();
  t[1].objects.clear();
  return t;
}

struct Expectation {
  StrictMode mode;
  bool ok_with_unexpected;
  bool ok_with_only_missing;
  bool warns_unexpected, warns_missing, returns_unexpected, returns_missing;
};

const Expectation kTable[] = {
    // mode                            ok(unexp) ok(miss) warnU  warnM  retU   retM
    {StrictMode::kAssumeOkUnexpected, false, true, false, false, false, false},
    {StrictMode::kLogUnexpected, true, true, true, false, false, false},
    {StrictMode::kLogAll, true, true, true, true, false, false},
    {StrictMode::kRaiseUnexpected, false, true, false, false, false, false},
    {StrictMode::kRaiseAll, false, false, false, false, false, false},
    {StrictMode::kReturnUnexpected, true, true, false, false, true, false},
    {StrictMode::kReturnAll, true, true, false, false, true, true},
    {StrictMode::kIgnoreAll, true, true, false, false, false, false},
};

bool AnyWarningHas(const LoadResult& r, const std::string& needle) {
  for (const std::string& w : r.warnings) {
    if (w.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(ReferenceStrict, EveryModeWithUnexpectedAndMissingKeys) {
  MemHarness h;
  const auto saved = Saved();
  ASSERT_TRUE(h.engine->Save(4, saved, SaveOptions()).ok());
  for (const Expectation& e : kTable) {
    SCOPED_TRACE(StrictModeName(e.mode));
    LoadResult r;
    Status s = LoadInto(*h.engine, WithUnexpected(), &r, e.mode);
    ASSERT_EQ(s.ok(), e.ok_with_unexpected) << s.ToString();
    if (!s.ok()) {
      EXPECT_NE(s.message().find("extra_t"), std::string::npos) << s.ToString();
    } else {
      // Unexpected entries are dropped, the rest is loaded.
      ASSERT_EQ(r.state[0].tensors.size(), 1u);
      EXPECT_EQ(r.state[0].tensors[0].data, saved[0].tensors[0].data);
      ASSERT_EQ(r.state[1].tensors.size(), 2u);
      EXPECT_EQ(r.state[1].tensors[1].data, saved[1].tensors[1].data);
      EXPECT_TRUE(r.state[1].objects.empty());
      EXPECT_EQ(AnyWarningHas(r, "extra_t") && AnyWarningHas(r, "extra_o"), e.warns_unexpected);
      EXPECT_EQ(AnyWarningHas(r, "rng_state"), e.warns_missing);
      if (e.returns_unexpected) {
        EXPECT_EQ(r.unexpected, (std::vector<std::vector<std::string>>{{"extra_t"}, {"extra_o"}}));
      } else {
        EXPECT_TRUE(r.unexpected.empty());
      }
      EXPECT_EQ(r.missing, e.returns_missing ? std::vector<std::string>{"rng_state"}
                                             : std::vector<std::string>{});
    }

    s = LoadInto(*h.engine, OnlyMissing(), &r, e.mode);
    ASSERT_EQ(s.ok(), e.ok_with_only_missing) << s.ToString();
    if (!s.ok()) {
      EXPECT_NE(s.message().find("rng_state"), std::string::npos) << s.ToString();
    }
  }
}

TEST(ReferenceStrict, AnExistingObjectKeyAtAnAbsentOffsetFailsInEveryMode) {
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(4, Saved(), SaveOptions()).ok());
  ShardedStateDict t;
  ShardedObject o = Object("rng_state", 0, 2);
  o.spec.global_shape = {4};  // rng_state/shard_0_4 was never saved (shard_0_2 was)
  t.objects.push_back(o);
  for (const Expectation& e : kTable) {
    LoadResult r;
    const Status s = LoadInto(*h.engine, {t}, &r, e.mode);
    EXPECT_FALSE(s.ok()) << StrictModeName(e.mode);
    if (e.mode == StrictMode::kRaiseAll) continue;  // fails earlier: "w" and "b" are missing
    EXPECT_EQ(s.code(), Status::Code::kNotFound) << StrictModeName(e.mode) << ": " << s.ToString();
    EXPECT_NE(s.message().find("rng_state/shard_0_4"), std::string::npos) << s.ToString();
  }
}

TEST(ReferenceStrict, ModeNamesRoundTrip) {
  for (const Expectation& e : kTable) {
    StrictMode parsed;
    ASSERT_TRUE(ParseStrictMode(StrictModeName(e.mode), &parsed));
    EXPECT_EQ(parsed, e.mode);
  }
  StrictMode parsed;
  EXPECT_FALSE(ParseStrictMode("strict", &parsed));
}

}  // namespace
}  // namespace ckptspec
