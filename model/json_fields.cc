#include "model/json_fields.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ckptspec {

using nlohmann::json;

namespace {

const json& Null() {
  static const json null;
  return null;
}

// True when `value` is a float holding an integer at least `limit` in magnitude: a number written
// as an integer too large for 64 bits (1e20), which is an overflow rather than a wrong type.
bool IsIntegralFloatBeyond(const json& value, double limit) {
  if (!value.is_number_float()) return false;
  const double d = value.get<double>();
  return std::isfinite(d) && std::nearbyint(d) == d && std::fabs(d) >= limit;
}

constexpr double kTwoTo63 = 9223372036854775808.0;
constexpr double kTwoTo64 = 18446744073709551616.0;

}  // namespace

JsonField::JsonField(const json& document) : value_(&document) {}

JsonField::JsonField(const json& document, std::string_view name) : value_(&document), key_(name) {}

JsonField::JsonField(const json& value, const JsonPath& path) : value_(&value), base_(&path) {}

JsonField::JsonField(const JsonField* parent, std::string_view key, size_t index, bool is_index,
                     const json* value, State state)
    : value_(value),
      parent_(parent),
      key_(key),
      index_(index),
      is_index_(is_index),
      state_(state) {}

const json& JsonField::value() const { return value_ != nullptr ? *value_ : Null(); }

std::string JsonField::Path() const {
  std::vector<const JsonField*> chain;
  for (const JsonField* f = this; f != nullptr; f = f->parent_) chain.push_back(f);
  const JsonField* root = chain.back();
  std::string path = root->base_ != nullptr && root->base_->size() > 0 ? root->base_->ToString()
                                                                       : std::string(root->key_);
  for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) {
    if ((*it)->is_index_) {
      AppendJsonPathIndex((*it)->index_, &path);
    } else {
      AppendJsonPathMember((*it)->key_, &path);
    }
  }
  return path.empty() ? std::string("(root)") : path;
}

size_t JsonField::size() const { return present() && value_->is_array() ? value_->size() : 0; }

Status JsonField::Error(std::string_view what) const {
  return Status::InvalidArgument(Path() + ": " + std::string(what));
}

Status JsonField::Expected(std::string_view what) const {
  if (!present()) return MissingError();
  return Error("expected " + std::string(what) + ", got " + JsonPreview(*value_));
}

Status JsonField::OutOfRange(int64_t value, int64_t min, int64_t max) const {
  return Error("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
               "], got " + std::to_string(value));
}

Status JsonField::UnknownMember(std::string_view name) const {
  return Error("unknown member " + JsonPreview(json(std::string(name))));
}

JsonField JsonField::Member(std::string_view name) const& {
  if (!present()) return JsonField(this, name, 0, false, nullptr, state_);
  if (value_->is_object()) {
    const auto it = value_->find(name);
    if (it != value_->end()) return JsonField(this, it.key(), 0, false, &*it, State::kPresent);
  }
  return JsonField(this, name, 0, false, nullptr, State::kMissing);
}

JsonField JsonField::OptionalMember(std::string_view name) const& {
  JsonField member = Member(name);
  if (member.state_ == State::kMissing && present() && value_->is_object()) {
    member.state_ = State::kSkipped;
  }
  return member;
}

JsonField JsonField::Element(size_t index) const& {
  const std::string_view no_key;
  if (!present()) return JsonField(this, no_key, index, true, nullptr, state_);
  if (index < size()) {
    return JsonField(this, no_key, index, true, &(*value_)[index], State::kPresent);
  }
  return JsonField(this, no_key, index, true, nullptr, State::kMissing);
}

Status JsonField::Absent() const {
  return state_ == State::kSkipped ? Status::OK() : MissingError();
}

Status JsonField::MissingError() const {
  // The first absent field on the way from the root: the one its parent lacks.
  const JsonField* missing = this;
  while (missing->parent_ != nullptr && !missing->parent_->present()) missing = missing->parent_;
  const JsonField* parent = missing->parent_;
  if (parent == nullptr) return Error("missing");  // not reached: roots are present
  if (missing->is_index_) {
    if (!parent->value_->is_array()) return parent->Expected("an array");
    return parent->Error("missing element [" + std::to_string(missing->index_) + "]");
  }
  if (!parent->value_->is_object()) return parent->Expected("an object");
  return parent->Error("missing required member " + JsonPreview(json(std::string(missing->key_))));
}

Status JsonField::ExpectPresent() const { return present() ? Status::OK() : Absent(); }

Status JsonField::ExpectObject() const {
  if (!present()) return Absent();
  return value_->is_object() ? Status::OK() : Expected("an object");
}

Status JsonField::ExpectArray() const {
  if (!present()) return Absent();
  return value_->is_array() ? Status::OK() : Expected("an array");
}

Status JsonField::ExpectArrayOfSize(size_t n) const {
  CKPTSPEC_RETURN_IF_ERROR(ExpectArray());
  if (!present() || value_->size() == n) return Status::OK();
  return Expected("an array of " + std::to_string(n) + (n == 1 ? " element" : " elements"));
}

Status JsonField::ExpectOnlyMembers(std::initializer_list<std::string_view> allowed) const {
  CKPTSPEC_RETURN_IF_ERROR(ExpectObject());
  if (!present()) return Status::OK();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    bool known = false;
    for (std::string_view name : allowed) known = known || it.key() == name;
    if (!known) return UnknownMember(it.key());
  }
  return Status::OK();
}

Status JsonField::ToInt64(std::string_view expected, int64_t* out) const {
  if (value_->is_number_unsigned()) {
    const uint64_t u = value_->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error("integer " + std::to_string(u) + " overflows int64");
    }
    *out = static_cast<int64_t>(u);
    return Status::OK();
  }
  if (value_->is_number_integer()) {
    *out = value_->get<int64_t>();
    return Status::OK();
  }
  if (IsIntegralFloatBeyond(*value_, kTwoTo63)) {
    return Error("integer " + JsonPreview(*value_) + " overflows int64");
  }
  return Expected(expected);
}

Status JsonField::GetInt64(int64_t* out) const {
  if (!present()) return Absent();
  return ToInt64("an integer", out);
}

Status JsonField::GetInt64(int64_t min, int64_t max, int64_t* out) const {
  if (!present()) return Absent();
  int64_t value;
  CKPTSPEC_RETURN_IF_ERROR(ToInt64("an integer", &value));
  if (value < min || value > max) return OutOfRange(value, min, max);
  *out = value;
  return Status::OK();
}

Status JsonField::GetNonNegativeInt64(int64_t* out) const {
  if (!present()) return Absent();
  const char* expected = "a non-negative integer";
  int64_t value;
  CKPTSPEC_RETURN_IF_ERROR(ToInt64(expected, &value));
  if (value < 0) return Expected(expected);
  *out = value;
  return Status::OK();
}

Status JsonField::GetUint64(uint64_t* out) const {
  if (!present()) return Absent();
  const bool non_negative =
      value_->is_number_unsigned() || (value_->is_number_integer() && value_->get<int64_t>() >= 0);
  if (non_negative) {
    *out = value_->get<uint64_t>();
    return Status::OK();
  }
  if (IsIntegralFloatBeyond(*value_, kTwoTo64) && value_->get<double>() > 0) {
    return Error("integer " + JsonPreview(*value_) + " overflows uint64");
  }
  return Expected("a non-negative integer");
}

Status JsonField::GetDouble(double* out) const {
  if (!present()) return Absent();
  if (!value_->is_number()) return Expected("a number");
  *out = value_->get<double>();
  return Status::OK();
}

Status JsonField::GetDoubleOrNull(std::optional<double>* out) const {
  if (!present()) return Absent();
  if (value_->is_null()) {
    out->reset();
    return Status::OK();
  }
  if (!value_->is_number()) return Expected("a number or null");
  *out = value_->get<double>();
  return Status::OK();
}

Status JsonField::GetBool(bool* out) const {
  if (!present()) return Absent();
  if (!value_->is_boolean()) return Expected("a boolean");
  *out = value_->get<bool>();
  return Status::OK();
}

Status JsonField::GetString(std::string* out) const {
  if (!present()) return Absent();
  if (!value_->is_string()) return Expected("a string");
  *out = value_->get_ref<const std::string&>();
  return Status::OK();
}

Status JsonField::GetStringArray(std::vector<std::string>* out) const {
  if (!present()) return Absent();
  if (!value_->is_array()) return Expected("an array of strings");
  std::vector<std::string> values;
  values.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    const JsonField element = Element(i);
    std::string v;
    CKPTSPEC_RETURN_IF_ERROR(element.GetString(&v));
    values.push_back(std::move(v));
  }
  *out = std::move(values);
  return Status::OK();
}

Status JsonField::GetNonNegativeInt64Array(Dims* out) const {
  if (!present()) return Absent();
  if (!value_->is_array()) return Expected("an array of non-negative integers");
  Dims values;
  values.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    const JsonField element = Element(i);
    int64_t v;
    CKPTSPEC_RETURN_IF_ERROR(element.GetNonNegativeInt64(&v));
    values.push_back(v);
  }
  *out = std::move(values);
  return Status::OK();
}

Status AsCorruption(const Status& status) {
  if (status.code() != Status::Code::kInvalidArgument) return status;
  return Status::Corruption(status.message());
}

}  // namespace ckptspec
