// SmallVector<T, N>: a vector of a trivially copyable T that keeps up to N elements inline and
// allocates only beyond them. Shapes, offsets and replica ids (model/box.h, model/sharded.h) are
// a handful of integers each, and a property case builds and drops tens of thousands of them: kept
// inline they cost no allocation.
//
// Contracts: the std::vector subset this project uses, with the same meaning (element order,
// iterator invalidation on growth, value semantics for copies, comparisons lexicographic). A
// moved-from vector is empty. Iterators are plain pointers. Constructible from a std::vector<T>
// (a copy); `ToStdVector()` gives one back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace ckptspec {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable<T>::value, "SmallVector holds trivially copyable types");
  static_assert(N > 0, "SmallVector needs an inline capacity");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() = default;
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(size_t n, const T& value) { assign(n, value); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  SmallVector(const std::vector<T>& values) {  // NOLINT: implicit, as a copy of a std::vector
    assign(values.begin(), values.end());
  }
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { MoveFrom(&other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      Release();
      MoveFrom(&other);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~SmallVector() { Release(); }

  std::vector<T> ToStdVector() const { return std::vector<T>(begin(), end()); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  // Throws std::out_of_range past the end, as std::vector::at does.
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  void clear() { size_ = 0; }
  void resize(size_t n) { resize(n, T()); }
  void resize(size_t n, const T& value) {
    const T copy = value;  // `value` may live in this vector, which reserve may move
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = copy;
    size_ = n;
  }
  void assign(size_t n, const T& value) {
    clear();
    resize(n, value);
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    if constexpr (std::is_pointer<It>::value) {
      // The range may lie in this vector (v.assign(v.begin() + 1, v.end())): copy it out first.
      const std::less<const T*> before;
      if (first != last && !before(first, data_) && before(first, data_ + size_)) {
        SmallVector copy;
        copy.Append(first, last);
        Swap(&copy);
        return;
      }
    }
    clear();
    Append(first, last);
  }
  void assign(std::initializer_list<T> values) { assign(values.begin(), values.end()); }

  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // `value` may live in this vector
      Grow(capacity_ * 2);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = value;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
    return back();
  }
  void pop_back() { --size_; }

  iterator insert(const_iterator pos, const T& value) { return insert(pos, size_t{1}, value); }
  iterator insert(const_iterator pos, size_t n, const T& value) {
    const T copy = value;
    const size_t at = static_cast<size_t>(pos - data_);
    OpenGap(at, n);
    for (size_t i = 0; i < n; ++i) data_[at + i] = copy;
    return data_ + at;
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_);
    SmallVector values(first, last);  // the range may lie in this vector
    OpenGap(at, values.size());
    std::copy(values.begin(), values.end(), data_ + at);
    return data_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> values) {
    return insert(pos, values.begin(), values.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t at = static_cast<size_t>(first - data_);
    const size_t n = static_cast<size_t>(last - first);
    std::copy(data_ + at + n, data_ + size_, data_ + at);
    size_ -= n;
    return data_ + at;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }
  friend bool operator<(const SmallVector& a, const SmallVector& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator>(const SmallVector& a, const SmallVector& b) { return b < a; }
  friend bool operator<=(const SmallVector& a, const SmallVector& b) { return !(b < a); }
  friend bool operator>=(const SmallVector& a, const SmallVector& b) { return !(a < b); }
  friend bool operator==(const SmallVector& a, const std::vector<T>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const std::vector<T>& a, const SmallVector& b) { return b == a; }
  friend bool operator!=(const SmallVector& a, const std::vector<T>& b) { return !(a == b); }
  friend bool operator!=(const std::vector<T>& a, const SmallVector& b) { return !(b == a); }

 private:
  bool IsInline() const { return data_ == inline_; }
  void Release() {
    if (!IsInline()) ::operator delete(data_);
    data_ = inline_;
    size_ = 0;
    capacity_ = N;
  }
  void Grow(size_t wanted) {
    const size_t n = std::max(wanted, capacity_ * 2);
    T* grown = static_cast<T*>(::operator new(n * sizeof(T)));
    if (size_ > 0) std::memcpy(grown, data_, size_ * sizeof(T));
    if (!IsInline()) ::operator delete(data_);
    data_ = grown;
    capacity_ = n;
  }
  template <typename It>
  void Append(It first, It last) {
    using Category = typename std::iterator_traits<It>::iterator_category;
    if constexpr (std::is_base_of<std::forward_iterator_tag, Category>::value) {
      const size_t n = static_cast<size_t>(std::distance(first, last));
      reserve(size_ + n);
      std::copy(first, last, data_ + size_);
      size_ += n;
    } else {
      for (; first != last; ++first) push_back(*first);
    }
  }
  void OpenGap(size_t at, size_t n) {
    reserve(size_ + n);
    std::copy_backward(data_ + at, data_ + size_, data_ + size_ + n);
    size_ += n;
  }
  // Takes other's elements (its heap block, or a copy of its inline ones); other is left empty.
  void MoveFrom(SmallVector* other) {
    if (other->IsInline()) {
      if (other->size_ > 0) std::memcpy(inline_, other->inline_, other->size_ * sizeof(T));
      data_ = inline_;
      capacity_ = N;
    } else {
      data_ = other->data_;
      capacity_ = other->capacity_;
    }
    size_ = other->size_;
    other->data_ = other->inline_;
    other->size_ = 0;
    other->capacity_ = N;
  }
  void Swap(SmallVector* other) {
    SmallVector tmp(std::move(*other));
    *other = std::move(*this);
    *this = std::move(tmp);
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

}  // namespace ckptspec
