// The result of reading a pickle (pickle_reader.h): a PickleDocument holding every value the
// pickle built, each referred to by an 8-byte PyValue. Nothing here runs Python code: objects of
// the whitelisted classes (pickle_globals.h) are records of named fields, and everything else is
// data.
//
// Memory: the document keeps the pickle's bytes, and its strings and bytes are views into them;
// integers up to 2^59 and every
// container item are 8 bytes, an object is one 8-byte slot per declared field. Values that only
// served to build others (an object's state dict, a reduce's argument tuple) are released when
// consumed unless the pickle refers to them again.
//
// A pickle may build cycles (a list that holds itself); a walker of a document must bound its
// depth (no accessor here recurses).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "formats/pickle_globals.h"

namespace ckptspec {

class PyValue {
 public:
  enum class Kind : uint8_t {
    kNone = 0,
    kBool,
    kInt,  // a Python int that fits in int64
    kFloat,
    kStr,    // str (and Python 2 str)
    kBytes,  // bytes
    kTuple,
    kList,
    kDict,
    kSet,
    kObject,        // an instance of a whitelisted (or, in permissive mode, opaque) class
    kGlobal,        // a class, function or constant named by GLOBAL / STACK_GLOBAL
    kPersistentId,  // BINPERSID's argument: torch.save's storage reference
    kFrozenSet,
    kByteArray,
  };

  PyValue() = default;
  Kind kind() const { return static_cast<Kind>(bits_ & 0xF); }
  bool is(Kind k) const { return kind() == k; }
  uint64_t payload() const { return bits_ >> 4; }
  static PyValue Make(Kind kind, uint64_t payload) {
    PyValue v;
    v.bits_ = (payload << 4) | static_cast<uint64_t>(kind);
    return v;
  }
  bool operator==(const PyValue& o) const { return bits_ == o.bits_; }

 private:
  uint64_t bits_ = 0;  // kNone
};

static_assert(std::is_trivially_copyable_v<PyValue>, "PyValueArena moves PyValues as bytes");

// A growable array of PyValues (the document's tuples and objects) that doubles as it fills. From
// 1 MiB on it is a memory mapping of its own, which grows by moving its pages (mremap), neither
// copying them nor touching fresh ones: its cost stays that of the values it holds, as a reserve
// up front would keep it, without one. Throws std::bad_alloc as std::vector does.
class PyValueArena {
 public:
  PyValueArena() = default;
  PyValueArena(const PyValueArena&) = delete;
  PyValueArena& operator=(const PyValueArena&) = delete;
  PyValueArena(PyValueArena&& o) noexcept { Take(&o); }
  PyValueArena& operator=(PyValueArena&& o) noexcept {
    if (this != &o) {
      Release();
      Take(&o);
    }
    return *this;
  }
  ~PyValueArena() { Release(); }

  size_t size() const { return size_; }
  const PyValue* data() const { return data_; }
  PyValue& operator[](size_t i) { return data_[i]; }
  const PyValue& operator[](size_t i) const { return data_[i]; }
  void push_back(PyValue v) {
    if (size_ == capacity_) Grow(size_ + 1);
    data_[size_++] = v;
  }
  // Appends n values that do not lie in this arena.
  void append(const PyValue* values, size_t n) {
    if (n > capacity_ - size_) Grow(size_ + n);
    if (n > 0) std::memcpy(static_cast<void*>(data_ + size_), values, n * sizeof(PyValue));
    size_ += n;
  }
  // Shrinks, or grows with None.
  void resize(size_t n) {
    if (n > capacity_) Grow(n);
    for (size_t i = size_; i < n; ++i) data_[i] = PyValue();
    size_ = n;
  }

 private:
  void Grow(size_t at_least);
  void Release();
  void Take(PyValueArena* o) {
    data_ = o->data_;
    size_ = o->size_;
    capacity_ = o->capacity_;
    o->data_ = nullptr;
    o->size_ = o->capacity_ = 0;
  }

  PyValue* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // PyValues; a mapping from kMappedBytes on, malloc's below
};

// "str", "dict", "object"...: for messages.
const char* PyKindName(PyValue::Kind kind);

// A contiguous run of values (tuple, list and set items; a dict's keys and values interleaved).
struct PySpan {
  const PyValue* data = nullptr;
  size_t size = 0;
  const PyValue* begin() const { return data; }
  const PyValue* end() const { return data + size; }
  const PyValue& operator[](size_t i) const { return data[i]; }
};

class PickleDocument {
 public:
  PickleDocument() = default;
  PickleDocument(const PickleDocument&) = delete;
  PickleDocument& operator=(const PickleDocument&) = delete;
  PickleDocument(PickleDocument&&) = default;
  PickleDocument& operator=(PickleDocument&&) = default;

  // What STOP returned.
  PyValue root() const { return root_; }

  // Accessors. Each expects the kind it names (a caller checks kind() first); given another kind
  // it returns the empty value (0, "", an empty span, nullptr), never undefined behaviour.
  bool Bool(PyValue v) const { return v.is(PyValue::Kind::kBool) && v.payload() != 0; }
  int64_t Int(PyValue v) const;
  double Float(PyValue v) const;
  std::string_view Str(PyValue v) const;  // kStr, kBytes and kByteArray
  // kTuple, kList, kSet, kFrozenSet; kDict: key, value, key, value...
  PySpan Items(PyValue v) const;
  size_t Len(PyValue v) const;  // items; a dict's number of keys
  // The value under string key `key` of a dict, or None (kNone) when absent.
  PyValue DictGet(PyValue dict, std::string_view key) const;

  // Objects and globals.
  const PickleClass* ClassOf(PyValue object_or_global) const;
  // "module.name" of a global or of an object's class.
  std::string GlobalName(PyValue object_or_global) const;
  // The field `name` of an object (None when the class has no such field or it was never set).
  PyValue Field(PyValue object, std::string_view name) const;
  PyValue FieldAt(PyValue object, size_t index) const;
  // The extra attributes of an object whose class accepts them (a dict), or None.
  PyValue Extras(PyValue object) const;
  // The tuple BINPERSID received.
  PyValue PersistentIdTuple(PyValue v) const;

  // Bytes of the values the document holds (not counting the pickle's bytes it refers to, nor
  // the spare capacity of its arenas).
  size_t MemoryBytes() const;

  // A tuple's length slot: the length, shifted past the pinned flag the reader keeps in bit 0.
  static size_t TupleLength(PyValue slot) { return slot.payload() >> 1; }
  // An object's class slot: the class id, shifted past the shared flag the reader keeps in bit 0.
  static size_t ObjectClassId(PyValue slot) { return slot.payload() >> 1; }

 private:
  friend class PickleMachine;

  struct Span64 {
    uint64_t start;
    uint64_t size;
  };

  std::unique_ptr<const std::string> bytes_;  // the pickle (a stable address: views point in)
  std::string_view input_;
  PyValue root_;
  std::vector<Span64> strings_;  // into input_
  std::vector<int64_t> big_ints_;
  std::vector<double> floats_;
  // A tuple of n items is n + 1 slots here: its length (an int), then the items; a kTuple
  // value's payload is the index of the length.
  PyValueArena tuples_;
  std::vector<std::vector<PyValue>> containers_;  // lists, dicts (flattened pairs), (frozen)sets
  // An object of a class with n fields is n + 1 slots here: its class id (an int, shifted: see
  // ObjectClassId), then the fields; a kObject value's payload is the index of the class id.
  PyValueArena objects_;
  std::unordered_map<uint64_t, PyValue> extras_;  // by object: its extra attributes (a dict)
  std::vector<PyValue> persistent_ids_;
  std::string owned_;  // strings built by the reader (a joined path); a Span64 marks them
  std::vector<const PickleClass*> classes_;  // the globals met, by id
  // Permissive mode: the classes made for unknown globals, with their names.
  std::vector<std::unique_ptr<PickleClass>> opaque_classes_;
  std::vector<std::unique_ptr<std::string>> opaque_names_;
};

}  // namespace ckptspec
