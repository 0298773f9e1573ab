#include "model/shared_json.h"

#include <memory>
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
  value_.Reset(Null());
  return *this;
}

SharedJson& SharedJson::operator=(nlohmann::json value) {
  value_.Reset(std::make_shared<nlohmann::json>(std::move(value)));
  return *this;
}

}  // namespace ckptspec
