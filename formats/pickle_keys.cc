#include "formats/pickle_keys.h"

#include <cmath>
#include <cstring>
#include <string_view>

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

constexpr size_t kMaxKeySteps = size_t{1} << 16;  // values visited per question
constexpr size_t kMaxKeyDepth = 512;              // tuples within tuples

uint64_t Scramble(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t HashBytes(std::string_view s, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;  // FNV-1a, 8 bytes at a time
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, s.data() + i, 8);
    h = (h ^ word) * 0x100000001b3ULL;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ULL;
  return Scramble(h ^ s.size());
}

uint64_t Bits(PyValue v) { return (v.payload() << 4) | static_cast<uint64_t>(v.kind()); }

bool IsNumber(PyValue v) { return v.is(Kind::kBool) || v.is(Kind::kInt) || v.is(Kind::kFloat); }

// The int a float equals, when it equals one of int64's.
bool FloatAsInt(double d, int64_t* i) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::trunc(d)) {
    return false;
  }
  *i = static_cast<int64_t>(d);
  return true;
}

}  // namespace

KeyAnswer PyKeys::Hash(PyValue v, uint64_t* hash) const {
  size_t steps = 0;
  KeyAnswer answer = KeyAnswer::kYes;
  HashWithin(v, 0, hash, &steps, &answer);
  return answer;
}

KeyAnswer PyKeys::Hashable(PyValue v) const {
  switch (v.kind()) {
    case Kind::kList:
    case Kind::kDict:
    case Kind::kSet:
    case Kind::kByteArray:
      return KeyAnswer::kUnhashable;
    case Kind::kTuple: {
      uint64_t hash = 0;
      return Hash(v, &hash);
    }
    default:
      return KeyAnswer::kYes;
  }
}

// Hashes `v` into `*hash`; false (with `*answer` saying why) when it is not hashable or the
// steps run out.
bool PyKeys::HashWithin(PyValue v, size_t depth, uint64_t* hash, size_t* steps,
                        KeyAnswer* answer) const {
  if (++*steps > kMaxKeySteps || depth > kMaxKeyDepth) {
    *answer = KeyAnswer::kTooCostly;
    return false;
  }
  switch (v.kind()) {
    case Kind::kList:
    case Kind::kDict:
    case Kind::kSet:
    case Kind::kByteArray:
      *answer = KeyAnswer::kUnhashable;
      return false;
    case Kind::kBool:
    case Kind::kInt:
      *hash = Scramble(static_cast<uint64_t>(doc_.Int(v)));
      return true;
    case Kind::kFloat: {
      const double d = doc_.Float(v);
      int64_t i = 0;
      if (FloatAsInt(d, &i)) {
        *hash = Scramble(static_cast<uint64_t>(i));
      } else {
        uint64_t bits = 0;
        std::memcpy(&bits, &d, sizeof(bits));
        *hash = Scramble(bits ^ 0x5bd1e995ULL);
      }
      return true;
    }
    case Kind::kStr:
    case Kind::kBytes:
      *hash = HashBytes(doc_.Str(v), static_cast<uint64_t>(v.kind()));
      return true;
    case Kind::kTuple: {
      uint64_t h = Scramble(0x7475706cULL ^ doc_.Len(v));
      for (const PyValue& item : doc_.Items(v)) {
        uint64_t item_hash = 0;
        if (!HashWithin(item, depth + 1, &item_hash, steps, answer)) return false;
        h = Scramble(h ^ item_hash);
      }
      *hash = h;
      return true;
    }
    case Kind::kFrozenSet: {
      uint64_t sum = 0;
      for (const PyValue& item : doc_.Items(v)) {
        uint64_t item_hash = 0;
        if (!HashWithin(item, depth + 1, &item_hash, steps, answer)) return false;
        sum += Scramble(item_hash);
      }
      *hash = Scramble(sum ^ 0x66726f7aULL ^ doc_.Len(v));
      return true;
    }
    default:  // None, and the values equal only to themselves
      *hash = Scramble(Bits(v));
      return true;
  }
}

KeyAnswer PyKeys::Equal(PyValue a, PyValue b) const {
  size_t steps = 0;
  bool equal = false;
  if (!EqualWithin(a, b, 0, &steps, &equal)) return KeyAnswer::kTooCostly;
  return equal ? KeyAnswer::kYes : KeyAnswer::kNo;
}

// Sets `*equal`; false when the steps run out.
bool PyKeys::EqualWithin(PyValue a, PyValue b, size_t depth, size_t* steps, bool* equal) const {
  if (++*steps > kMaxKeySteps || depth > kMaxKeyDepth) return false;
  *equal = false;
  if (a == b) {
    *equal = true;
    return true;
  }
  if (IsNumber(a) && IsNumber(b)) {
    if (a.is(Kind::kFloat) && b.is(Kind::kFloat)) {
      *equal = doc_.Float(a) == doc_.Float(b);
    } else if (a.is(Kind::kFloat) || b.is(Kind::kFloat)) {
      const PyValue f = a.is(Kind::kFloat) ? a : b;
      const PyValue i = a.is(Kind::kFloat) ? b : a;
      int64_t as_int = 0;
      *equal = FloatAsInt(doc_.Float(f), &as_int) && as_int == doc_.Int(i);
    } else {
      *equal = doc_.Int(a) == doc_.Int(b);
    }
    return true;
  }
  if (a.kind() != b.kind()) return true;
  switch (a.kind()) {
    case Kind::kStr:
    case Kind::kBytes:
      *equal = doc_.Str(a) == doc_.Str(b);
      return true;
    case Kind::kTuple: {
      const PySpan x = doc_.Items(a), y = doc_.Items(b);
      if (x.size != y.size) return true;
      for (size_t i = 0; i < x.size; ++i) {
        bool item_equal = false;
        if (!EqualWithin(x[i], y[i], depth + 1, steps, &item_equal)) return false;
        if (!item_equal) return true;
      }
      *equal = true;
      return true;
    }
    case Kind::kFrozenSet: {
      const PySpan x = doc_.Items(a), y = doc_.Items(b);
      if (x.size != y.size) return true;
      for (const PyValue& e : x) {
        bool found = false;
        for (const PyValue& f : y) {
          if (!EqualWithin(e, f, depth + 1, steps, &found)) return false;
          if (found) break;
        }
        if (!found) return true;
      }
      *equal = true;
      return true;
    }
    default:
      return true;
  }
}

void PyKeyTable::Place(uint64_t slot) {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(slot >> shift_);
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = slot;
}

void PyKeyTable::Add(uint64_t hash, uint64_t position) {
  if (3 * (size_ + 1) > 2 * slots_.size()) {  // at most two thirds full
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), 0);
    shift_ = 64 - __builtin_ctzll(slots_.size());
    for (uint64_t slot : old) {
      if (slot != 0) Place(slot);
    }
  }
  Place((hash & ~uint64_t{0xffffffff}) | (position + 1));
  ++size_;
}

}  // namespace ckptspec
