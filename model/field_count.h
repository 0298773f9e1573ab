// FieldCount<T>(): the number of members of the aggregate T, found at compile time by the longest
// brace initializer T{...} accepts. A function that must name every member of a struct (an
// identity, an encoder) asserts the count it was written for, so a member added later fails the
// build until that function is updated:
//
//   static_assert(FieldCount<ModelConfig>() == 16, "compare the new member of ModelConfig");
//
// Contract: T is an aggregate without base classes whose members are not arrays and are
// initializable from a value of their own type (the members' default initializers do not matter).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace ckptspec {
namespace field_count_detail {

// Converts to any member type; never evaluated.
struct AnyMember {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): the point is the implicit conversion
};

// Count<T, Members...>::Get(0): sizeof...(Members) when T{Members..., one more} is ill-formed,
// else the count with one more member.
template <class T, class... Members>
struct Count {
  template <class U = T, class = decltype(U{std::declval<Members>()..., AnyMember{}})>
  static constexpr std::size_t Get(int) {
    return Count<T, Members..., AnyMember>::Get(0);
  }
  static constexpr std::size_t Get(long) { return sizeof...(Members); }
};

}  // namespace field_count_detail

template <class T>
constexpr std::size_t FieldCount() {
  static_assert(std::is_aggregate_v<T>, "FieldCount counts the members of an aggregate");
  return field_count_detail::Count<T>::Get(0);
}

}  // namespace ckptspec
