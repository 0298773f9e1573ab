#include "model/shared_json.h"

#include <cmath>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

using nlohmann::json;

TEST(SharedJson, DefaultIsAnEmptyObjectAndNullptrIsNull) {
  const SharedJson empty;
  EXPECT_TRUE(empty->is_object());
  EXPECT_TRUE(empty->empty());
  const SharedJson null = nullptr;
  EXPECT_TRUE(null->is_null());
  SharedJson assigned = json{{"a", 1}};
  assigned = nullptr;
  EXPECT_TRUE(assigned->is_null());
}

TEST(SharedJson, CopiesShareUntilOneIsChanged) {
  SharedJson a = json{{"iteration", 7}, {"args", {{"lr", 0.5}}}};
  SharedJson b = a;
  EXPECT_TRUE(a.SharesWith(b));
  (*b.Mutable())["iteration"] = 8;
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a->at("iteration"), 7);  // the change is never seen through the other copy
  EXPECT_EQ(b->at("iteration"), 8);
  EXPECT_EQ(b->at("args"), a->at("args"));
}

TEST(SharedJson, AnUnsharedValueIsChangedInPlace) {
  SharedJson a = json{{"iteration", 7}};
  const json* before = &a.get();
  json* value = a.Mutable();
  EXPECT_EQ(value, before);
  (*value)["iteration"] = 9;
  EXPECT_EQ(a->at("iteration"), 9);
}

TEST(SharedJson, TheSharedDefaultsAreNeverWritten) {
  SharedJson a;
  (*a.Mutable())["x"] = 1;
  SharedJson b = nullptr;
  *b.Mutable() = 2;
  EXPECT_TRUE(SharedJson()->empty());
  EXPECT_TRUE(SharedJson(nullptr)->is_null());
  EXPECT_EQ(a->at("x"), 1);
  EXPECT_EQ(b.get(), 2);
}

TEST(SharedJson, EqualityComparesValuesEvenWhenShared) {
  const SharedJson a = json{{"lr", 0.1}};
  const SharedJson b = json{{"lr", 0.1}};
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, (json{{"lr", 0.1}}));
  EXPECT_NE(a, (json{{"lr", 0.2}}));
  // nlohmann::json's ==: a NaN is unequal to itself, in one shared tree as in two.
  const SharedJson nan = json{{"lr", std::nan("")}};
  const SharedJson same = nan;
  EXPECT_TRUE(nan.SharesWith(same));
  EXPECT_NE(nan, same);
}

TEST(SharedJson, PrintsItsValue) {
  std::ostringstream os;
  os << SharedJson(json{{"a", 1}});
  EXPECT_EQ(os.str(), "{\"a\":1}");
}

TEST(SharedJson, CopiesOnOtherThreadsNeverSeeAChange) {
  SharedJson original = json{{"n", 0}};
  std::vector<SharedJson> copies(4, original);
  std::vector<std::thread> readers;
  for (SharedJson& c : copies) {
    readers.emplace_back([&c] {
      for (int i = 0; i < 1000; ++i) {
        const SharedJson again = c;
        ASSERT_EQ(again->at("n"), 0);
      }
    });
  }
  for (int i = 1; i <= 1000; ++i) (*original.Mutable())["n"] = i;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(original->at("n"), 1000);
  for (const SharedJson& c : copies) EXPECT_EQ(c->at("n"), 0);
}

}  // namespace
}  // namespace ckptspec
