// The pickle memo as CPython's unpickler keeps it (Modules/_pickle.c, which pickle.load and
// torch.load run; Lib/pickle.py agrees): a map from keys 0 to 2^63 - 1 to values.
//  - PUT, BINPUT and LONG_BINPUT store the stack's top at the key they name; a key stored before
//    gets the new value (and the memo no more keys).
//  - MEMOIZE stores at the number of distinct keys the memo holds, len(memo): after BINPUT 5 that
//    is key 1, and after BINPUT 1 it is key 1 again, whose value it replaces.
//  - GET, BINGET and LONG_BINGET push the value of a key stored before; any other key is an error.
//  - PUT's and GET's key is a line of text, read as int(line) reads it (ParseMemoKeyText); a
//    negative PUT key is an error.
// The reader (pickle_reader.h) keeps the values of only the keys some GET reads (MemoReadSet,
// found by a first pass over the input), and the set of keys stored (MemoKeySet) to number
// MEMOIZE as CPython does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ckptspec {

// The key of a text PUT or GET line (without its newline), as CPython reads it: int(line, 10) up
// to a NUL byte (surrounding whitespace, one sign, single underscores between digits, leading
// zeros and at most 4300 digits allowed), then a Py_ssize_t. False where CPython raises for the
// text: malformed, beyond 2^63 - 1, or negative (a PUT's ValueError, a GET's missing key).
bool ParseMemoKeyText(std::string_view line, uint64_t* key);

// The keys some GET reads, each given a slot 0 to size() - 1. Memory: a bitmap of the keys below
// the byte offset of a GET that reads them (so at most one bit per byte of input scanned), and
// 8 bytes per GET of a key beyond its offset.
class MemoReadSet {
 public:
  // Records that the GET at byte `position` of the input reads `key`.
  void Add(uint64_t key, size_t position) {
    const uint64_t word = key / 64;
    if (word < bits_.size() && key < position) {
      bits_[word] |= uint64_t{1} << (key % 64);
    } else {
      AddBeyondBitmap(key, position);
    }
  }
  // Adds the keys `other` recorded (another part of the same input).
  void Merge(const MemoReadSet& other);
  // Numbers the keys; call once, after the last Add or Merge and before Slot.
  void Finish();
  // The slot of `key`, or -1 when no GET reads it.
  int64_t Slot(uint64_t key) const {
    const uint64_t word = key / 64;
    if (word < bits_.size()) {
      const uint64_t bit = uint64_t{1} << (key % 64);
      if (!(bits_[word] & bit)) return -1;
      return static_cast<int64_t>(rank_before_[word] + static_cast<uint64_t>(__builtin_popcountll(
                                                           bits_[word] & (bit - 1))));
    }
    return FarSlot(key);
  }
  uint64_t size() const { return near_count_ + far_.size(); }

 private:
  void AddBeyondBitmap(uint64_t key, size_t position);
  int64_t FarSlot(uint64_t key) const;

  std::vector<uint64_t> bits_;         // keys below 64 * bits_.size()
  std::vector<uint64_t> rank_before_;  // the keys set in the words before each word (Finish)
  std::vector<uint64_t> far_;          // the others: sorted and unique after Finish
  uint64_t near_count_ = 0;
};

// The set of keys stored so far, and so len(memo). While they are exactly 0 to len(memo) - 1
// (as Python writes pickles: each store at len(memo)) it is that number alone; otherwise a bitmap
// of the keys below twice the number of stores so far (every MEMOIZE key is), and a hash set of
// the keys stored beyond that when stored (Insert says so, for the reader's memory budget).
class MemoKeySet {
 public:
  enum class Insertion { kReplaced, kNew, kNewFar };
  Insertion Insert(uint64_t key) {
    ++stores_;
    if (dense_ && key <= size_) {
      if (key < size_) return Insertion::kReplaced;
      ++size_;
      return Insertion::kNew;
    }
    return InsertSparsely(key);
  }
  bool Contains(uint64_t key) const {
    if (dense_) return key < size_;
    const uint64_t word = key / 64;
    if (word < bits_.size() && (bits_[word] & (uint64_t{1} << (key % 64)))) return true;
    return !far_.empty() && far_.count(key) != 0;
  }
  // len(memo): the next MEMOIZE's key.
  uint64_t size() const { return size_; }

  // What a far key costs (a node of the hash set and its bucket), for the budget.
  static constexpr uint64_t kFarKeyBytes = 48;

 private:
  Insertion InsertSparsely(uint64_t key);

  bool dense_ = true;  // the keys are 0 to size_ - 1; bits_ and far_ unused
  std::vector<uint64_t> bits_;
  std::unordered_set<uint64_t> far_;
  uint64_t size_ = 0;
  uint64_t stores_ = 0;
};

}  // namespace ckptspec
