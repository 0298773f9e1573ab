// SharedJson: a JSON value that its copies share until one of them is changed (copy on write).
//
// A save's common state is one JSON tree that every rank's state dict, the save's signature and
// the checkpoint's index each hold. Held as SharedJson, those copies are pointer copies, and a
// reader that meets one tree under several holders (the address of get()) may examine it once.
//
// Contracts:
//  - A SharedJson always holds a value; a default-constructed one holds an empty JSON object, one
//    made from nullptr a JSON null (both shared, so neither allocates).
//  - Reads (get(), the implicit conversion, ->, *) see the value as it was when this SharedJson
//    was made, assigned or last changed through Mutable(). A change made through one SharedJson
//    is never seen through another.
//  - Mutable() returns the value to change in place, first copying it when another SharedJson
//    shares it. The pointer may be written through until this SharedJson is next copied from,
//    assigned or destroyed: a copy made afterwards shares what the pointer changes.
//  - Equality compares values with nlohmann::json's ==, whether or not they are shared (a tree
//    holding a NaN is unequal to itself, shared or not).
//  - Threads: as CopyOnWrite (model/copy_on_write.h), whose mechanism this is; assigning a
//    SharedJson is a reset.
#pragma once

#include <cstddef>
#include <ostream>

#include <nlohmann/json.hpp>

#include "model/copy_on_write.h"

namespace ckptspec {

class SharedJson {
 public:
  SharedJson();
  SharedJson(std::nullptr_t);        // NOLINT(google-explicit-constructor): a JSON null
  SharedJson(nlohmann::json value);  // NOLINT(google-explicit-constructor): holds any JSON value
  SharedJson& operator=(std::nullptr_t);
  SharedJson& operator=(nlohmann::json value);

  const nlohmann::json& get() const { return value_.get(); }
  operator const nlohmann::json&() const { return get(); }  // NOLINT: a read of the value
  const nlohmann::json* operator->() const { return &get(); }
  const nlohmann::json& operator*() const { return get(); }

  nlohmann::json* Mutable() { return value_.Mutable(); }

  // True when both hold the very same tree (equal, then, unless the tree holds a NaN).
  bool SharesWith(const SharedJson& other) const { return value_.SharesWith(other.value_); }

  friend bool operator==(const SharedJson& a, const SharedJson& b) { return a.get() == b.get(); }
  friend bool operator!=(const SharedJson& a, const SharedJson& b) { return !(a == b); }
  friend bool operator==(const SharedJson& a, const nlohmann::json& b) { return a.get() == b; }
  friend bool operator!=(const SharedJson& a, const nlohmann::json& b) { return !(a == b); }
  friend bool operator==(const nlohmann::json& a, const SharedJson& b) { return a == b.get(); }
  friend bool operator!=(const nlohmann::json& a, const SharedJson& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const SharedJson& j) { return os << j.get(); }

 private:
  CopyOnWrite<nlohmann::json> value_;
};

}  // namespace ckptspec
