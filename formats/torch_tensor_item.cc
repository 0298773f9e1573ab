#include "formats/torch_tensor_item.h"

#include <string>

#include "formats/pickle_reader.h"
#include "formats/quoted_name.h"

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

Status Bad(const ByteSource& source, const std::string& what) {
  return Status::Corruption(source.name() + ": data.pkl: " + what);
}

bool ReadDims(const PickleDocument& doc, PyValue tuple, Dims* out) {
  if (!tuple.is(Kind::kTuple)) return false;
  out->clear();
  for (const PyValue& d : doc.Items(tuple)) {
    if (!d.is(Kind::kInt) || doc.Int(d) < 0) return false;
    out->push_back(doc.Int(d));
  }
  return true;
}

}  // namespace

Status ReadTorchTensorItem(const ByteSource& source, const ZipLimits& limits,
                           TorchTensorItem* item) {
  *item = TorchTensorItem();
  TorchSaveArchive archive;
  CKPTSPEC_RETURN_IF_ERROR(OpenTorchSaveArchive(source, limits, &archive));
  const ZipEntry* pkl = archive.Find("data.pkl");
  std::string bytes;
  CKPTSPEC_RETURN_IF_ERROR(ReadSmallEntry(source, *pkl, kMaxTensorPickleBytes, &bytes));
  PickleDocument doc;
  const Status read = ReadPickle(std::move(bytes), PickleOptions(), &doc);
  if (!read.ok()) return read.WithContext(source.name() + ": data.pkl");
  const PyValue t = doc.root();
  if (!t.is(Kind::kObject) || doc.ClassOf(t) != &TensorClass()) {
    return Bad(source, "holds a " + std::string(PyKindName(t.kind())) + ", not one tensor");
  }
  const PySpan pid = doc.Items(doc.PersistentIdTuple(doc.Field(t, "storage")));
  if (pid.size != 5 || doc.Str(pid[0]) != "storage" || !pid[1].is(Kind::kGlobal) ||
      !pid[2].is(Kind::kStr) || !pid[4].is(Kind::kInt)) {
    return Bad(source,
               "the tensor's storage is not a persistent id ('storage', class, key, "
               "location, numel)");
  }
  const PickleClass* storage_class = doc.ClassOf(pid[1]);
  if (storage_class->role != GlobalRole::kStorageClass) {
    return Bad(source, "the storage class " + doc.GlobalName(pid[1]) + " is not a storage");
  }
  const PyValue dtype_field = doc.Field(t, "dtype");
  const TorchDType* dtype = storage_class->dtype;  // null for UntypedStorage
  if (dtype_field.is(Kind::kGlobal)) {
    const PickleClass* dc = doc.ClassOf(dtype_field);
    if (dc->role != GlobalRole::kDType) {
      return Bad(source, doc.GlobalName(dtype_field) + " is not a torch.dtype");
    }
    if (dtype != nullptr && dtype != dc->dtype) {
      return Bad(source, std::string("the storage class ") + storage_class->name +
                             " disagrees with the dtype " + dc->dtype->name);
    }
    dtype = dc->dtype;
  }
  if (dtype == nullptr) return Bad(source, "an UntypedStorage without a dtype");
  const uint64_t element = dtype->element_bytes;
  const int64_t numel = doc.Int(pid[4]);
  const uint64_t storage_bytes = storage_class->dtype == nullptr
                                     ? static_cast<uint64_t>(numel)
                                     : static_cast<uint64_t>(numel) * element;
  if (numel < 0 || (storage_class->dtype != nullptr &&
                    static_cast<uint64_t>(numel) > (uint64_t{1} << 62) / element)) {
    return Bad(source, "a storage of " + std::to_string(numel) + " elements");
  }
  const std::string key(doc.Str(pid[2]));
  const ZipEntry* data = archive.Find("data/" + key);
  if (data == nullptr) {
    return Bad(source, "the storage's entry " + QuotedName(archive.prefix + "/data/" + key) +
                           " is missing");
  }
  if (data->size != storage_bytes) {
    return Status::Corruption(source.name() + ": " + QuotedName(data->name) + " holds " +
                              std::to_string(data->size) + " bytes; its storage declares " +
                              std::to_string(storage_bytes));
  }
  const PyValue storage_offset = doc.Field(t, "storage_offset");
  if (!ReadDims(doc, doc.Field(t, "size"), &item->shape) ||
      !ReadDims(doc, doc.Field(t, "stride"), &item->stride) ||
      item->shape.size() != item->stride.size() || !storage_offset.is(Kind::kInt) ||
      doc.Int(storage_offset) < 0) {
    return Bad(source,
               "the tensor's size, stride and storage_offset are not tuples of one "
               "length and an int, all non-negative");
  }
  int64_t numel_view = 0;
  if (!CheckedVolume(item->shape, &numel_view)) return Bad(source, "the tensor's size overflows");
  int64_t expected_stride = 1;
  for (size_t i = item->shape.size(); i-- > 0;) {
    if (item->shape[i] > 1 && item->stride[i] != expected_stride) {
      return Status::NotSupported(
          source.name() + ": data.pkl: strides " + DimsToString(item->stride) + " of size " +
          DimsToString(item->shape) + " are not row-major contiguous (DCP saves contiguous items)");
    }
    expected_stride *= std::max<int64_t>(item->shape[i], 1);
  }
  item->storage_offset = doc.Int(storage_offset);
  const uint64_t storage_elements = storage_bytes / element;
  const uint64_t first_element = static_cast<uint64_t>(item->storage_offset);
  if (first_element > storage_elements ||
      static_cast<uint64_t>(numel_view) > storage_elements - first_element) {
    return Bad(source, "elements [" + std::to_string(item->storage_offset) + ", +" +
                           std::to_string(numel_view) + ") lie outside the storage of " +
                           std::to_string(storage_elements) + " elements");
  }
  item->dtype = dtype;
  item->storage = *data;
  item->data_offset = data->data_offset + first_element * element;
  item->data_bytes = static_cast<uint64_t>(numel_view) * element;
  return Status::OK();
}

}  // namespace ckptspec
