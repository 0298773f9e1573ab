#include "formats/pickle_value.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "formats/pickle_globals.h"

namespace ckptspec {
namespace {

constexpr uint64_t kOwnedStringBit = uint64_t{1} << 63;

// An arena of this many bytes or more is a mapping of its own.
constexpr size_t kMappedBytes = size_t{1} << 20;

}  // namespace

void PyValueArena::Grow(size_t at_least) {
  size_t capacity = capacity_ < 16 ? 16 : 2 * capacity_;
  if (capacity < at_least) capacity = at_least;
  if (capacity > SIZE_MAX / 2 / sizeof(PyValue)) throw std::bad_alloc();
  const size_t bytes = capacity * sizeof(PyValue);
  const size_t old_bytes = capacity_ * sizeof(PyValue);
  void* p = nullptr;
  if (bytes < kMappedBytes) {
    p = std::realloc(static_cast<void*>(data_), bytes);
    if (p == nullptr) throw std::bad_alloc();
  } else if (old_bytes >= kMappedBytes) {
    p = mremap(data_, old_bytes, bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
  } else {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(p, static_cast<const void*>(data_), size_ * sizeof(PyValue));
    std::free(data_);
  }
  data_ = static_cast<PyValue*>(p);
  capacity_ = capacity;
}

void PyValueArena::Release() {
  if (capacity_ * sizeof(PyValue) >= kMappedBytes) {
    munmap(data_, capacity_ * sizeof(PyValue));
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = capacity_ = 0;
}

const char* PyKindName(PyValue::Kind kind) {
  switch (kind) {
    case PyValue::Kind::kNone:
      return "None";
    case PyValue::Kind::kBool:
      return "bool";
    case PyValue::Kind::kInt:
      return "int";
    case PyValue::Kind::kFloat:
      return "float";
    case PyValue::Kind::kStr:
      return "str";
    case PyValue::Kind::kBytes:
      return "bytes";
    case PyValue::Kind::kTuple:
      return "tuple";
    case PyValue::Kind::kList:
      return "list";
    case PyValue::Kind::kDict:
      return "dict";
    case PyValue::Kind::kSet:
      return "set";
    case PyValue::Kind::kObject:
      return "object";
    case PyValue::Kind::kGlobal:
      return "global";
    case PyValue::Kind::kPersistentId:
      return "persistent id";
    case PyValue::Kind::kFrozenSet:
      return "frozenset";
    case PyValue::Kind::kByteArray:
      return "bytearray";
  }
  return "?";
}

int64_t PickleDocument::Int(PyValue v) const {
  if (v.is(PyValue::Kind::kBool)) return static_cast<int64_t>(v.payload());
  if (!v.is(PyValue::Kind::kInt)) return 0;
  const uint64_t p = v.payload();
  if (p & (uint64_t{1} << 59)) return big_ints_[p & ((uint64_t{1} << 59) - 1)];
  return static_cast<int64_t>(p);
}

double PickleDocument::Float(PyValue v) const {
  if (v.is(PyValue::Kind::kInt)) return static_cast<double>(Int(v));
  if (!v.is(PyValue::Kind::kFloat)) return 0;
  return floats_[v.payload()];
}

std::string_view PickleDocument::Str(PyValue v) const {
  if (!v.is(PyValue::Kind::kStr) && !v.is(PyValue::Kind::kBytes) &&
      !v.is(PyValue::Kind::kByteArray)) {
    return {};
  }
  const Span64& s = strings_[v.payload()];
  if (s.start & kOwnedStringBit)
    return std::string_view(owned_).substr(s.start & ~kOwnedStringBit, s.size);
  return input_.substr(s.start, s.size);
}

PySpan PickleDocument::Items(PyValue v) const {
  switch (v.kind()) {
    case PyValue::Kind::kTuple: {
      const size_t start = v.payload();
      return {tuples_.data() + start + 1, TupleLength(tuples_[start])};
    }
    case PyValue::Kind::kList:
    case PyValue::Kind::kDict:
    case PyValue::Kind::kSet:
    case PyValue::Kind::kFrozenSet: {
      const std::vector<PyValue>& c = containers_[v.payload()];
      return {c.data(), c.size()};
    }
    default:
      return {};
  }
}

size_t PickleDocument::Len(PyValue v) const {
  const size_t n = Items(v).size;
  return v.is(PyValue::Kind::kDict) ? n / 2 : n;
}

PyValue PickleDocument::DictGet(PyValue dict, std::string_view key) const {
  if (!dict.is(PyValue::Kind::kDict)) return PyValue();
  const PySpan items = Items(dict);
  for (size_t i = 0; i + 1 < items.size; i += 2) {
    if (items[i].is(PyValue::Kind::kStr) && Str(items[i]) == key) return items[i + 1];
  }
  return PyValue();
}

const PickleClass* PickleDocument::ClassOf(PyValue v) const {
  if (v.is(PyValue::Kind::kGlobal)) return classes_[v.payload()];
  if (v.is(PyValue::Kind::kObject)) return classes_[ObjectClassId(objects_[v.payload()])];
  return nullptr;
}

std::string PickleDocument::GlobalName(PyValue v) const {
  const PickleClass* c = ClassOf(v);
  if (c == nullptr) return "";
  return std::string(c->module) + "." + c->name;
}

PyValue PickleDocument::FieldAt(PyValue object, size_t index) const {
  const PickleClass* c = ClassOf(object);
  if (!object.is(PyValue::Kind::kObject) || index >= c->field_count) return PyValue();
  return objects_[object.payload() + 1 + index];
}

PyValue PickleDocument::Field(PyValue object, std::string_view name) const {
  const PickleClass* c = ClassOf(object);
  if (c == nullptr || !object.is(PyValue::Kind::kObject)) return PyValue();
  for (size_t i = 0; i < c->field_count; ++i) {
    if (name == c->fields[i]) return FieldAt(object, i);
  }
  return DictGet(Extras(object), name);
}

PyValue PickleDocument::Extras(PyValue object) const {
  if (!object.is(PyValue::Kind::kObject)) return PyValue();
  const auto it = extras_.find(object.payload());
  return it == extras_.end() ? PyValue() : it->second;
}

PyValue PickleDocument::PersistentIdTuple(PyValue v) const {
  if (!v.is(PyValue::Kind::kPersistentId)) return PyValue();
  return persistent_ids_[v.payload()];
}

size_t PickleDocument::MemoryBytes() const {
  size_t bytes = strings_.size() * sizeof(Span64) + big_ints_.size() * 8 + floats_.size() * 8 +
                 tuples_.size() * sizeof(PyValue) +
                 containers_.size() * sizeof(std::vector<PyValue>) +
                 objects_.size() * sizeof(PyValue) + extras_.size() * 32 +
                 persistent_ids_.capacity() * sizeof(PyValue) + owned_.capacity() +
                 classes_.capacity() * sizeof(void*);
  for (const std::vector<PyValue>& c : containers_) bytes += c.size() * sizeof(PyValue);
  for (const auto& c : opaque_classes_) bytes += sizeof(*c);
  return bytes;
}

}  // namespace ckptspec
