#include "formats/pickle_memo.h"

#include <algorithm>

namespace ckptspec {
namespace {

// Py_ISSPACE: the C locale's white space.
bool IsPythonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// CPython's limit on the digits int() converts (sys.get_int_max_str_digits(), 4300 by default).
constexpr size_t kMaxIntDigits = 4300;

void SetBit(std::vector<uint64_t>* bits, uint64_t key) {
  const uint64_t word = key / 64;
  if (word >= bits->size()) bits->resize(std::max<size_t>(word + 1, 2 * bits->size()), 0);
  (*bits)[word] |= uint64_t{1} << (key % 64);
}

}  // namespace

bool ParseMemoKeyText(std::string_view line, uint64_t* key) {
  line = line.substr(0, line.find('\0'));  // CPython parses the line as a C string
  size_t i = 0;
  while (i < line.size() && IsPythonSpace(line[i])) ++i;
  bool negative = false;
  if (i < line.size() && (line[i] == '+' || line[i] == '-')) negative = line[i++] == '-';
  uint64_t value = 0;
  size_t digits = 0;
  bool overflow = false;
  while (i < line.size()) {
    if (line[i] == '_') {
      // One underscore, between two digits.
      if (digits == 0 || i + 1 >= line.size() || !IsDigit(line[i + 1])) return false;
      ++i;
    }
    if (!IsDigit(line[i])) break;
    const uint64_t d = static_cast<uint64_t>(line[i] - '0');
    if (value > (uint64_t{INT64_MAX} - d) / 10) overflow = true;
    if (!overflow) value = value * 10 + d;
    ++digits;
    ++i;
  }
  while (i < line.size() && IsPythonSpace(line[i])) ++i;
  if (digits == 0 || digits > kMaxIntDigits || i != line.size() || overflow) return false;
  if (negative && value != 0) return false;
  *key = value;
  return true;
}

void MemoReadSet::AddBeyondBitmap(uint64_t key, size_t position) {
  if (key < position) {
    SetBit(&bits_, key);
  } else {
    far_.push_back(key);
  }
}

void MemoReadSet::Merge(const MemoReadSet& other) {
  if (other.bits_.size() > bits_.size()) bits_.resize(other.bits_.size(), 0);
  for (size_t w = 0; w < other.bits_.size(); ++w) bits_[w] |= other.bits_[w];
  far_.insert(far_.end(), other.far_.begin(), other.far_.end());
}

void MemoReadSet::Finish() {
  std::sort(far_.begin(), far_.end());
  far_.erase(std::unique(far_.begin(), far_.end()), far_.end());
  // A far key within the bitmap's reach (another GET's offset grew it) joins the bitmap.
  const uint64_t reach = 64 * static_cast<uint64_t>(bits_.size());
  const auto first_far = std::lower_bound(far_.begin(), far_.end(), reach);
  for (auto it = far_.begin(); it != first_far; ++it) SetBit(&bits_, *it);
  far_.erase(far_.begin(), first_far);
  std::vector<uint64_t>(far_).swap(far_);  // give back the duplicates' room
  rank_before_.assign(bits_.size(), 0);
  uint64_t rank = 0;
  for (size_t w = 0; w < bits_.size(); ++w) {
    rank_before_[w] = rank;
    rank += static_cast<uint64_t>(__builtin_popcountll(bits_[w]));
  }
  near_count_ = rank;
}

int64_t MemoReadSet::FarSlot(uint64_t key) const {
  const auto it = std::lower_bound(far_.begin(), far_.end(), key);
  if (it == far_.end() || *it != key) return -1;
  return static_cast<int64_t>(near_count_ + static_cast<uint64_t>(it - far_.begin()));
}

MemoKeySet::Insertion MemoKeySet::InsertSparsely(uint64_t key) {
  if (dense_) {  // a key beyond len(memo): from now on, the keys one by one
    dense_ = false;
    bits_.assign((size_ + 63) / 64, 0);
    for (uint64_t w = 0; w < size_ / 64; ++w) bits_[w] = ~uint64_t{0};
    if (size_ % 64 != 0) bits_[size_ / 64] = (uint64_t{1} << (size_ % 64)) - 1;
  }
  if (Contains(key)) return Insertion::kReplaced;
  ++size_;
  if (key < 2 * stores_ + 64) {
    SetBit(&bits_, key);
    return Insertion::kNew;
  }
  far_.insert(key);
  return Insertion::kNewFar;
}

}  // namespace ckptspec
