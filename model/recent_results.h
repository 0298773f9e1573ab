// RecentResults<Value>: the last few results of a pure computation, kept for the process so that
// the same inputs are not computed again (a property case makes the same state plan many times).
// The caller decides which kept value answers its inputs, by a predicate that compares the inputs
// each value was computed from (config_identity.h); a value is immutable once kept, and shared
// with whoever found it.
//
// Contracts: at most `capacity` values, the most recently kept or found first; the rest are
// dropped. Safe to use from several threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ckptspec {

template <class Value>
class RecentResults {
 public:
  explicit RecentResults(size_t capacity) : capacity_(capacity) {}
  RecentResults(const RecentResults&) = delete;
  RecentResults& operator=(const RecentResults&) = delete;

  // The first kept value for which `answers(value)` is true, made the most recent; or null.
  template <class Answers>
  std::shared_ptr<const Value> Find(Answers answers) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < values_.size(); ++i) {
      if (!answers(*values_[i])) continue;
      std::rotate(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(i),
                  values_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return values_.front();
    }
    return nullptr;
  }

  // Keeps `value` as the most recent, dropping the least recent beyond the capacity.
  void Keep(std::shared_ptr<const Value> value) {
    std::shared_ptr<const Value> dropped;  // released after the lock
    std::lock_guard<std::mutex> lock(mu_);
    values_.insert(values_.begin(), std::move(value));
    if (values_.size() > capacity_) {
      dropped = std::move(values_.back());
      values_.pop_back();
    }
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::vector<std::shared_ptr<const Value>> values_;  // guarded by mu_; most recent first
};

}  // namespace ckptspec
