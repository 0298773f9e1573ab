// Typed reading of the members and elements of a parsed JSON document, each error naming where the
// value sits: `tensors[3].chunks[0].offset: expected an integer, got "x"`.
//
// A JsonField is a value of a document and its JSON path, written as JsonPath::ToString writes it
// (members joined by '.', indices in brackets, "(root)" for the document). Fields are taken from
// the document's root, from a named root (a message or a stored object known by a name: its
// members' paths start with the name, "save.tensors[0].file"), or from a value being streamed
// (JsonStreamHandler::Take), then member by member and element by element:
//
//   const JsonField chunk(value, path);  // in Take: "tensors[3].chunks[0]"
//   CKPTSPEC_RETURN_IF_ERROR(chunk.ExpectObject());
//   CKPTSPEC_RETURN_IF_ERROR(chunk.Member("rank").GetInt64(&rank));
//   CKPTSPEC_RETURN_IF_ERROR(chunk.OptionalMember("offset").GetNonNegativeInt64(&offset));
//
// Contract: never throws and never asserts. Every refusal is an InvalidArgument Status whose
// message is the field's path, ": " and what is wrong; callers that read stored data re-code it as
// Corruption (AsCorruption), with their file name in front where they know one. Paths are
// rendered only when an error is reported.
//
// Lifetime: a field refers to the document, to the field it was taken from and to the member name
// it was taken with (or the root's name; string literals are fine); all must outlive it. Fields are meant to be local
// variables of the reading code: taking a member or element of a temporary field does not
// compile. A field made from a JsonPath is valid only during the call the path was handed to.
//
// Absent fields: a member the object lacks, an element past the array's end, and what is taken
// from either. Their paths still name where they would be (Error works on them). Reading an absent
// field taken with Member or Element fails: `ranks[0]: missing required member "rank"`, or
// `ranks[0]: expected an object, got 3` when what it was taken from has the wrong type. Reading a
// member taken with OptionalMember that the object lacks succeeds and writes nothing, and so does
// reading anything taken from it.
//
// The messages after the path (the value shown by JsonPreview):
//   wrong type:             expected an integer, got "x"        (a string, a boolean, a number, an
//                                                                array, an object, ...)
//   below zero:             expected a non-negative integer, got -4
//   another length:         expected an array of 2 elements, got [1]
//   outside bounds:         expected an integer in [1, 1048576], got 0
//   beyond 64 bits:         integer 9223372036854775808 overflows int64  (also an integral float)
//   a member not allowed:   unknown member "replica_ids"
//   a member missing:       missing required member "rank"      (at the object's path)
//   an element missing:     missing element [3]                 (at the array's path)
//   a name not known:       unknown value "sometimes"
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/box.h"

#include "model/json_util.h"
#include "model/status.h"

namespace ckptspec {

class JsonField {
 public:
  // The root of `document`; its path is "(root)".
  explicit JsonField(const nlohmann::json& document);
  // The root of `document`, whose path is `name` ("save", "load reply"): its members are
  // "save.iteration". The name is written as it is, never quoted.
  JsonField(const nlohmann::json& document, std::string_view name);
  // A value being streamed, which sits at `path` of its document.
  JsonField(const nlohmann::json& value, const JsonPath& path);

  bool present() const { return state_ == State::kPresent; }
  // True when the field is present and null.
  bool is_null() const { return present() && value_->is_null(); }
  // The value; null when absent.
  const nlohmann::json& value() const;
  // The path: "tensors[3].chunks[0].offset", "(root)".
  std::string Path() const;
  // The number of elements of an array; 0 for anything else.
  size_t size() const;

  // InvalidArgument "<path>: <what>", absent or not.
  Status Error(std::string_view what) const;
  // InvalidArgument "<path>: expected <what>, got <the value>". On an absent field, the error of
  // the member or element that is missing.
  Status Expected(std::string_view what) const;
  // Error "expected an integer in [min, max], got <value>".
  Status OutOfRange(int64_t value, int64_t min, int64_t max) const;
  // Error "unknown member <name>", for an object whose reader checks its members' names itself.
  Status UnknownMember(std::string_view name) const;

  // A member of this object. Reading it fails when it is absent.
  JsonField Member(std::string_view name) const&;
  // A member of this object that may be left out: reading it when absent does nothing. Reading it
  // still fails when this field is present and not an object.
  JsonField OptionalMember(std::string_view name) const&;
  // An element of this array. Reading it fails when it is absent.
  JsonField Element(size_t index) const&;
  JsonField Member(std::string_view name) const&& = delete;
  JsonField OptionalMember(std::string_view name) const&& = delete;
  JsonField Element(size_t index) const&& = delete;

  // OK when the field is present (or left out and optional).
  Status ExpectPresent() const;
  Status ExpectObject() const;
  Status ExpectArray() const;
  // An array of exactly `n` elements ("expected an array of 2 elements, got [1]").
  Status ExpectArrayOfSize(size_t n) const;
  // An object whose members are all named in `allowed`.
  Status ExpectOnlyMembers(std::initializer_list<std::string_view> allowed) const;

  // Calls read(element) for each element of this array, in order, each element's index in its
  // path, and returns the first error.
  template <typename Read>
  Status ForEachElement(Read read) const&;
  // Calls read(name, member) for each member of this object, in the document's order (nlohmann
  // keeps members sorted by name), and returns the first error.
  template <typename Read>
  Status ForEachMember(Read read) const&;

  // Each Get writes *out only when it returns OK and the field is present.
  Status GetInt64(int64_t* out) const;
  Status GetInt64(int64_t min, int64_t max, int64_t* out) const;
  Status GetNonNegativeInt64(int64_t* out) const;
  // An integer within the range of Int (a signed integer type).
  template <typename Int>
  Status GetInt(Int* out) const;
  Status GetUint64(uint64_t* out) const;
  // Any number, integers included.
  Status GetDouble(double* out) const;
  // A number, or null (which resets *out).
  Status GetDoubleOrNull(std::optional<double>* out) const;
  Status GetBool(bool* out) const;
  Status GetString(std::string* out) const;
  // An array of strings ("expected an array of strings, got ..."; "[2]: expected a string, ...").
  Status GetStringArray(std::vector<std::string>* out) const;
  // An array of non-negative integers ("expected an array of non-negative integers, got ...").
  Status GetNonNegativeInt64Array(Dims* out) const;
  // A string that parse(text, out) maps to a value; parse returns false for a name it does not
  // know ("unknown value \"sometimes\"").
  template <typename T, typename Parse>
  Status GetEnum(Parse parse, T* out) const;

 private:
  enum class State {
    kPresent,
    kMissing,  // absent, and reading it fails
    kSkipped,  // absent and optional (or taken from such a field): reading it does nothing
  };

  JsonField(const JsonField* parent, std::string_view key, size_t index, bool is_index,
            const nlohmann::json* value, State state);

  // What reading an absent field returns: OK when skipped, the missing error otherwise.
  Status Absent() const;
  Status MissingError() const;
  // The value as an int64, or the error: `expected` for a value that is not an integer.
  Status ToInt64(std::string_view expected, int64_t* out) const;

  const nlohmann::json* value_;  // null when absent
  const JsonField* parent_ = nullptr;
  const JsonPath* base_ = nullptr;  // the root's path in its document, when streamed
  std::string_view key_;            // a member's name
  size_t index_ = 0;                // an element's index
  bool is_index_ = false;
  State state_ = State::kPresent;
};

template <typename Read>
Status JsonField::ForEachElement(Read read) const& {
  CKPTSPEC_RETURN_IF_ERROR(ExpectArray());
  for (size_t i = 0; i < size(); ++i) {
    const JsonField element = Element(i);
    CKPTSPEC_RETURN_IF_ERROR(read(element));
  }
  return Status::OK();
}

template <typename Read>
Status JsonField::ForEachMember(Read read) const& {
  CKPTSPEC_RETURN_IF_ERROR(ExpectObject());
  if (!present()) return Status::OK();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    const JsonField member(this, it.key(), 0, false, &it.value(), State::kPresent);
    CKPTSPEC_RETURN_IF_ERROR(read(it.key(), member));
  }
  return Status::OK();
}

template <typename Int>
Status JsonField::GetInt(Int* out) const {
  static_assert(std::is_integral_v<Int> && std::is_signed_v<Int> && sizeof(Int) <= sizeof(int64_t));
  int64_t value = *out;
  CKPTSPEC_RETURN_IF_ERROR(
      GetInt64(std::numeric_limits<Int>::min(), std::numeric_limits<Int>::max(), &value));
  *out = static_cast<Int>(value);
  return Status::OK();
}

template <typename T, typename Parse>
Status JsonField::GetEnum(Parse parse, T* out) const {
  std::string name;
  CKPTSPEC_RETURN_IF_ERROR(GetString(&name));
  if (!present()) return Status::OK();
  if (!parse(name, out)) return Error("unknown value " + JsonPreview(value()));
  return Status::OK();
}

// What a reader of stored data returns for `status`, a reader's result: an InvalidArgument refusal
// becomes Corruption with the same message (the data, not the caller, is wrong); OK and other
// codes are returned as they are.
Status AsCorruption(const Status& status);

}  // namespace ckptspec
