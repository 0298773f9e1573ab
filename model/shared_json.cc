#include "model/shared_json.h"

#include <atomic>
#include <utility>

namespace ckptspec {

namespace {

// The values every default-constructed (or null) SharedJson shares, never destroyed: a SharedJson
// may be made during exit. Each is always shared, so Mutable() never writes it.
const std::shared_ptr<nlohmann::json>& EmptyObject() {
  static const auto* empty = new std::shared_ptr<nlohmann::json>(
      std::make_shared<nlohmann::json>(nlohmann::json::object()));
  return *empty;
}
const std::shared_ptr<nlohmann::json>& Null() {
  static const auto* null = new std::shared_ptr<nlohmann::json>(std::make_shared<nlohmann::json>());
  return *null;
}

}  // namespace

SharedJson::SharedJson() : value_(EmptyObject()) {}

SharedJson::SharedJson(std::nullptr_t) : value_(Null()) {}

SharedJson::SharedJson(nlohmann::json value)
    : value_(std::make_shared<nlohmann::json>(std::move(value))) {}

SharedJson& SharedJson::operator=(std::nullptr_t) {
  value_ = Null();
  return *this;
}

SharedJson& SharedJson::operator=(nlohmann::json value) {
  value_ = std::make_shared<nlohmann::json>(std::move(value));
  return *this;
}

nlohmann::json* SharedJson::Mutable() {
  if (value_.use_count() != 1) {
    value_ = std::make_shared<nlohmann::json>(*value_);
  } else {
    // The last other holder may have just been destroyed on another thread: its reads of the
    // value happen before this write (its release decrement, this acquire fence).
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  return value_.get();
}

}  // namespace ckptspec
