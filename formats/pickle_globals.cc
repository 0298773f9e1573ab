#include "formats/pickle_globals.h"

#include <string>
#include <vector>

namespace ckptspec {
namespace {

constexpr const char* kDcpMetadata = "torch.distributed.checkpoint.metadata";
constexpr const char* kDcpPlanner = "torch.distributed.checkpoint.planner";

// The classes and functions besides dtypes and storage classes (those come from torch_dtype.h).
// Fields follow the classes' declarations in torch 2.x; a DCP class that later torch versions
// extend accepts extra attributes, which are kept as data.
const std::vector<PickleClass>& FixedGlobals() {
  static const std::vector<PickleClass> kGlobals = {
      {kDcpMetadata,
       "Metadata",
       GlobalRole::kDataclass,
       5,
       {"state_dict_metadata", "planner_data", "storage_data", "storage_meta", "version"},
       true,
       nullptr},
      {kDcpMetadata,
       "TensorStorageMetadata",
       GlobalRole::kDataclass,
       3,
       {"properties", "size", "chunks"},
       true,
       nullptr},
      {kDcpMetadata,
       "TensorProperties",
       GlobalRole::kStateTuple,
       5,
       {"dtype", "layout", "requires_grad", "memory_format", "pin_memory"},
       false,
       nullptr},
      {kDcpMetadata,
       "ChunkStorageMetadata",
       GlobalRole::kDataclass,
       2,
       {"offsets", "sizes"},
       true,
       nullptr},
      {kDcpMetadata, "BytesStorageMetadata", GlobalRole::kDataclass, 0, {}, true, nullptr},
      {kDcpMetadata,
       "MetadataIndex",
       GlobalRole::kDataclass,
       3,
       {"fqn", "offset", "index"},
       false,
       nullptr},
      {kDcpMetadata,
       "StorageMeta",
       GlobalRole::kDataclass,
       4,
       {"checkpoint_id", "save_id", "load_id", "modules"},
       true,
       nullptr},
      {kDcpMetadata, "_MEM_FORMAT_ENCODING", GlobalRole::kEnum, 1, {"name"}, false, nullptr},
      {"torch.distributed.checkpoint.filesystem",
       "_StorageInfo",
       GlobalRole::kDataclass,
       4,
       {"relative_path", "offset", "length", "transform_descriptors"},
       true,
       nullptr},
      {kDcpPlanner,
       "SavePlan",
       GlobalRole::kDataclass,
       4,
       {"items", "storage_data", "planner_data", "usable"},
       true,
       nullptr},
      {kDcpPlanner,
       "WriteItem",
       GlobalRole::kDataclass,
       3,
       {"index", "type", "tensor_data"},
       true,
       nullptr},
      {kDcpPlanner,
       "TensorWriteData",
       GlobalRole::kDataclass,
       3,
       {"chunk", "properties", "size"},
       true,
       nullptr},
      {kDcpPlanner, "BytesIOWriteData", GlobalRole::kDataclass, 1, {"nbytes"}, true, nullptr},
      {kDcpPlanner, "WriteItemType", GlobalRole::kEnum, 1, {"name"}, false, nullptr},
      {kDcpPlanner, "LoadItemType", GlobalRole::kEnum, 1, {"name"}, false, nullptr},
      {"torch", "Size", GlobalRole::kTorchSize, 0, {}, false, nullptr},
      {"torch.serialization", "_get_layout", GlobalRole::kLayout, 0, {}, false, nullptr},
      {"builtins", "getattr", GlobalRole::kGetattr, 0, {}, false, nullptr},
      {"collections", "OrderedDict", GlobalRole::kOrderedDict, 0, {}, false, nullptr},
      {"pathlib", "PosixPath", GlobalRole::kPath, 0, {}, false, nullptr},
      {"pathlib", "PurePosixPath", GlobalRole::kPath, 0, {}, false, nullptr},
      {"pathlib", "Path", GlobalRole::kPath, 0, {}, false, nullptr},
      {"torch.storage", "UntypedStorage", GlobalRole::kStorageClass, 0, {}, false, nullptr},
      {"torch._utils", "_rebuild_tensor_v2", GlobalRole::kRebuildTensor, 0, {}, false, nullptr},
      {"torch._utils", "_rebuild_tensor_v3", GlobalRole::kRebuildTensor, 0, {}, false, nullptr},
      {"torch._utils", "_rebuild_parameter", GlobalRole::kRebuildParameter, 0, {}, false, nullptr},
  };
  return kGlobals;
}

// Fixed globals, then one kDType global per torch dtype name and alias, then one kStorageClass
// global per typed storage class.
const std::vector<PickleClass>& AllGlobals() {
  static const std::vector<PickleClass> kAll = [] {
    std::vector<PickleClass> all = FixedGlobals();
    int count = 0;
    const TorchDType* dtypes = TorchDTypes(&count);
    for (int i = 0; i < count; ++i) {
      const TorchDType& d = dtypes[i];
      for (const char* name : {d.name, d.alias}) {
        if (name != nullptr) all.push_back({"torch", name, GlobalRole::kDType, 0, {}, false, &d});
      }
      if (d.storage_class != nullptr) {
        all.push_back({"torch", d.storage_class, GlobalRole::kStorageClass, 0, {}, false, &d});
      }
    }
    return all;
  }();
  return kAll;
}

}  // namespace

size_t FieldIndex(const PickleClass& c, std::string_view field) {
  for (size_t i = 0; i < c.field_count; ++i) {
    if (c.fields[i] == field) return i;
  }
  return c.field_count;
}

const PickleClass* FindPickleGlobal(std::string_view module, std::string_view name) {
  for (const PickleClass& c : AllGlobals()) {
    if (name == c.name && module == c.module) return &c;
  }
  return nullptr;
}

const PickleClass& TensorClass() {
  static const PickleClass kTensor = {
      "torch",
      "Tensor",
      GlobalRole::kDataclass,
      7,
      {"storage", "storage_offset", "size", "stride", "requires_grad", "backward_hooks", "dtype"},
      false,
      nullptr};
  return kTensor;
}

const PickleClass* PickleGlobals(size_t* count) {
  *count = AllGlobals().size();
  return AllGlobals().data();
}

}  // namespace ckptspec
