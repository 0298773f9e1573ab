// Generators for any size RapidCheck can be handed. Its integer generators assume a size >= 0:
// given a negative one (a damaged reproduce string carries any 32-bit size), gen::inRange returns
// values outside its range, and a generator that indexes with them reads out of bounds. Every
// public generator of this directory is wrapped in AtNonNegativeSize.
//
// Contract: a size >= 0 passes through unchanged (the same Random, the same cases, the same
// shrinks); a negative size generates as size 0. Sizes above RapidCheck's nominal 100 need no
// guard: gen::inRange scales no further than its full range.
#pragma once

#include <algorithm>

#include <rapidcheck.h>

namespace ckptspec {
namespace gen {

template <typename T>
rc::Gen<T> AtNonNegativeSize(rc::Gen<T> generator) {
  return rc::gen::withSize(
      [generator](int size) { return rc::gen::resize(std::max(size, 0), generator); });
}

}  // namespace gen
}  // namespace ckptspec
