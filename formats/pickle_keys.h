// Python's dict keys and set elements over the values of a PickleDocument, so that a dict or set
// the reader builds holds what Python's holds: d[k] = v on a key equal to one held replaces its
// value (the key held stays, in its place), s.add(e) of an element equal to one held does nothing,
// and a key or element that is not hashable is an error (Python's TypeError).
//  - Hashable: None, bool, int, float, str, bytes, frozenset, an object, a global, a persistent
//    id, and a tuple of hashable values. Not: list, dict, set, bytearray.
//  - Equal: a value to itself; numbers of equal value (True == 1 == 1.0, -0.0 == 0.0; a NaN only
//    to itself); str to str and bytes to bytes by their bytes; tuples item by item; frozensets as
//    sets. An object, a global or a persistent id only to itself.
// Each question's work is bounded (a key that the memo builds from shared tuples can take time
// exponential in its size to walk, as it does in Python): beyond the bound the answer is
// kTooCostly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/pickle_value.h"

namespace ckptspec {

enum class KeyAnswer : uint8_t { kYes, kNo, kUnhashable, kTooCostly };

class PyKeys {
 public:
  explicit PyKeys(const PickleDocument& doc) : doc_(doc) {}

  // kYes when `v` is hashable, setting `*hash` (equal values, equal hashes).
  KeyAnswer Hash(PyValue v, uint64_t* hash) const;
  // kYes when `v` is hashable, without hashing it.
  KeyAnswer Hashable(PyValue v) const;
  // For two hashable values: kYes, kNo or kTooCostly.
  KeyAnswer Equal(PyValue a, PyValue b) const;

 private:
  bool HashWithin(PyValue v, size_t depth, uint64_t* hash, size_t* steps, KeyAnswer* answer) const;
  bool EqualWithin(PyValue a, PyValue b, size_t depth, size_t* steps, bool* equal) const;

  const PickleDocument& doc_;
};

// The keys of one dict or set, for finding among many an equal one without comparing it to all:
// an open-addressing table of their positions by hash. Memory: 12 to 24 bytes a key.
class PyKeyTable {
 public:
  // The most keys a table holds.
  static constexpr uint64_t kMaxKeys = (uint64_t{1} << 31) - 1;

  // The position of a held key whose hash is `hash` and that `equal(position)` says is equal, or
  // -1; -1 with *too_costly set when `equal` said kTooCostly.
  template <typename Equal>
  int64_t Find(uint64_t hash, Equal equal, bool* too_costly) const {
    if (slots_.empty()) return -1;
    const size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(hash >> shift_);; i = (i + 1) & mask) {
      const uint64_t slot = slots_[i];
      if (slot == 0) return -1;
      if ((slot >> 32) == (hash >> 32)) {
        const uint64_t position = (slot & 0xffffffffULL) - 1;
        const KeyAnswer a = equal(position);
        if (a == KeyAnswer::kTooCostly) {
          *too_costly = true;
          return -1;
        }
        if (a == KeyAnswer::kYes) return static_cast<int64_t>(position);
      }
    }
  }
  // Records a key at `position` (below kMaxKeys) whose hash is `hash`.
  void Add(uint64_t hash, uint64_t position);
  size_t size() const { return size_; }
  size_t MemoryBytes() const { return slots_.capacity() * sizeof(uint64_t); }

 private:
  void Place(uint64_t slot);

  // A slot: the hash's top 32 bits, then the position + 1 (0: empty). A key's first slot to try
  // is given by the hash's top bits, which the slot keeps, so that the table can grow.
  std::vector<uint64_t> slots_;
  int shift_ = 64;  // 64 - log2(slots_.size())
  size_t size_ = 0;
};

}  // namespace ckptspec
