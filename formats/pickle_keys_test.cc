#include "formats/pickle_keys.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

namespace ckptspec {
namespace {

// The table finds each key added, through hashes that collide (in their top bits too, which the
// table keeps) and through its growth.
RC_GTEST_PROP(PyKeyTable, FindsEachKeyAdded, ()) {
  const auto keys = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, 400));
  const auto hash_of = [](uint32_t key) {
    // Few distinct hashes: keys collide in all 64 bits or in the top 32 only.
    return (uint64_t{key % 7} << 32) | (key % 13);
  };
  PyKeyTable table;
  std::vector<uint32_t> held;  // by position
  std::map<uint32_t, uint64_t> position_of;
  for (uint32_t key : keys) {
    bool too_costly = false;
    const auto equal = [&](uint64_t p) {
      return held[p] == key ? KeyAnswer::kYes : KeyAnswer::kNo;
    };
    const int64_t found = table.Find(hash_of(key), equal, &too_costly);
    RC_ASSERT(!too_costly);
    if (position_of.count(key) != 0) {
      RC_ASSERT(found == static_cast<int64_t>(position_of[key]));
    } else {
      RC_ASSERT(found == -1);
      position_of[key] = held.size();
      table.Add(hash_of(key), held.size());
      held.push_back(key);
    }
  }
  RC_ASSERT(table.size() == held.size());
}

}  // namespace
}  // namespace ckptspec
