#include "formats/pickle_value.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace ckptspec {
namespace {

// The arena holds what a std::vector would, across its move from malloc's memory to a mapping
// (1 MiB: 131072 values) and the mapping's growth, and when moved.
RC_GTEST_PROP(PyValueArena, HoldsWhatAVectorHolds, ()) {
  PyValueArena arena;
  std::vector<PyValue> model;
  const int steps = *rc::gen::inRange(1, 16);
  for (int step = 0; step < steps; ++step) {
    const uint64_t tag = static_cast<uint64_t>(step) << 32;
    switch (*rc::gen::inRange(0, 4)) {
      case 0: {  // a run of push_back
        const size_t n = *rc::gen::inRange<size_t>(0, 5000);
        for (size_t i = 0; i < n; ++i) {
          const PyValue v = PyValue::Make(PyValue::Kind::kInt, tag | i);
          arena.push_back(v);
          model.push_back(v);
        }
        break;
      }
      case 1: {  // a block, sometimes large
        const size_t n = *rc::gen::oneOf(rc::gen::inRange<size_t>(0, 100),
                                         rc::gen::inRange<size_t>(100000, 140000));
        std::vector<PyValue> block(n);
        for (size_t i = 0; i < n; ++i) block[i] = PyValue::Make(PyValue::Kind::kStr, tag | i);
        arena.append(block.data(), n);
        model.insert(model.end(), block.begin(), block.end());
        break;
      }
      case 2: {  // shrink or grow with None
        const size_t n = *rc::gen::inRange<size_t>(0, model.size() + 140000);
        arena.resize(n);
        model.resize(n);
        break;
      }
      case 3: {  // moved away and back
        PyValueArena other(std::move(arena));
        RC_ASSERT(arena.size() == 0u);
        arena = std::move(other);
        break;
      }
    }
    RC_ASSERT(arena.size() == model.size());
  }
  for (size_t i = 0; i < model.size(); ++i) RC_ASSERT(arena[i] == model[i]);
}

}  // namespace
}  // namespace ckptspec
