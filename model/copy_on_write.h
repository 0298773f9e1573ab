// CopyOnWrite<T>: a value of T that copies share until one of them changes it. The one mechanism
// behind the project's shared values (SharedJson, the stateful test's SharedStates).
//
// Contracts:
//  - Holds a T always (the pointer given to the constructor or to Reset must not be null).
//  - get() sees the value as it was when this holder was made, reset or last changed through
//    Mutable(); a change through one holder is never seen through another.
//  - Mutable() returns the value to change in place, first copying it when another holder (or a
//    Share()d pointer) refers to it. The pointer may be written through until this holder is
//    next copied from, shared, reset or destroyed: a copy made afterwards shares what it changes.
//  - Threads: like std::shared_ptr<const T>. Holders that share a value may be read, copied and
//    destroyed on different threads; one holder is not to be used by two threads while one of
//    them resets it or calls Mutable().
#pragma once

#include <atomic>
#include <memory>
#include <utility>

namespace ckptspec {

template <typename T>
class CopyOnWrite {
 public:
  explicit CopyOnWrite(std::shared_ptr<T> value) : value_(std::move(value)) {}

  const T& get() const { return *value_; }

  T* Mutable() {
    if (value_.use_count() != 1) {
      value_ = std::make_shared<T>(*value_);
    } else {
      // The last other holder may have just been destroyed on another thread: its reads of the
      // value happen before this write (its release decrement, this acquire fence).
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return value_.get();
  }

  void Reset(std::shared_ptr<T> value) { value_ = std::move(value); }

  // The value as it is now, for a holder outside CopyOnWrite: later writes through Mutable()
  // copy first.
  std::shared_ptr<const T> Share() const { return value_; }

  // True when both hold the very same value.
  bool SharesWith(const CopyOnWrite& other) const { return value_ == other.value_; }

 private:
  std::shared_ptr<T> value_;
};

}  // namespace ckptspec
