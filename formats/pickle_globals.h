// The globals a pickle read by pickle_reader.h may name: one whitelist, and what each is allowed
// to do. A pickle naming anything else is refused (strict mode) with the global's name and byte
// offset; nothing is ever imported or called. In permissive mode (for listing what a torch.save
// file such as Megatron's common.pt holds) an unknown global becomes an opaque class whose
// instances record their arguments and state as data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "formats/torch_dtype.h"

namespace ckptspec {

enum class GlobalRole : uint8_t {
  kDataclass,   // NEWOBJ() then BUILD(dict of fields), or REDUCE/NEWOBJ with positional fields
  kStateTuple,  // as kDataclass, but BUILD receives the fields as a tuple (a __setstate__ class)
  kEnum,        // members arrive as builtins.getattr(cls, "NAME"): an object whose field is "name"
  kDType,       // a torch.dtype (torch.float32)
  kStorageClass,      // torch.FloatStorage..., torch.storage.UntypedStorage: in a persistent id
  kTorchSize,         // torch.Size(tuple): the tuple itself
  kLayout,            // torch.serialization._get_layout("torch.strided"): the name, a str
  kGetattr,           // builtins.getattr(enum class, "NAME"): the member; nothing else
  kOrderedDict,       // collections.OrderedDict(): a dict
  kPath,              // pathlib.PosixPath(*parts) and its kin: the parts joined by "/", a str
  kRebuildTensor,     // torch._utils._rebuild_tensor_v2 / _v3: an object of TensorClass()
  kRebuildParameter,  // torch._utils._rebuild_parameter(data, ...): the tensor `data`
  kOpaque,            // permissive mode: an unknown global; fields "__args__" and "__state__"
};

inline constexpr size_t kMaxPickleFields = 8;

struct PickleClass {
  const char* module;
  const char* name;
  GlobalRole role;
  size_t field_count;
  std::string_view fields[kMaxPickleFields];  // kDataclass/kStateTuple/kEnum/kOpaque: in order
  bool accepts_extra_attributes;  // BUILD may set attributes beyond `fields` (kept as data)
  const TorchDType* dtype;        // kDType; kStorageClass (nullptr: UntypedStorage)
};

// The index of field `field` in `c`'s fields; c.field_count when it has none.
size_t FieldIndex(const PickleClass& c, std::string_view field);

// The whitelisted global `module`.`name`, or nullptr.
const PickleClass* FindPickleGlobal(std::string_view module, std::string_view name);

// The class of the objects _rebuild_tensor_v2/_v3 build: fields storage (a persistent id),
// storage_offset, size, stride, requires_grad, backward_hooks, dtype (v3's; None for v2, whose
// dtype is the storage class's).
const PickleClass& TensorClass();

// Every whitelisted global, for docs and tests.
const PickleClass* PickleGlobals(size_t* count);

}  // namespace ckptspec
