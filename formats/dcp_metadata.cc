#include "formats/dcp_metadata.h"

#include "formats/pickle_globals.h"
#include "formats/pickle_reader.h"

#include <utility>

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

constexpr std::string_view kMetadataModule = "torch.distributed.checkpoint.metadata";

bool IsClass(const PickleDocument& doc, PyValue v, std::string_view module, std::string_view name) {
  const PickleClass* c = doc.ClassOf(v);
  return v.is(Kind::kObject) && c != nullptr && module == c->module && name == c->name;
}

bool IsIntTuple(const PickleDocument& doc, PyValue v) {
  if (!v.is(Kind::kTuple)) return false;
  for (const PyValue& d : doc.Items(v)) {
    if (!d.is(Kind::kInt)) return false;
  }
  return true;
}

std::string TypeName(const PickleDocument& doc, PyValue v) {
  if (v.is(Kind::kObject) || v.is(Kind::kGlobal)) return doc.GlobalName(v);
  return PyKindName(v.kind());
}

Status BadShape(const std::string& where, const std::string& what) {
  return Status::Corruption(where + ": " + what);
}

}  // namespace

Status DcpMetadata::Read(std::string bytes) {
  tensors_.clear();
  bytes_items_.clear();
  CKPTSPEC_RETURN_IF_ERROR(ReadPickle(std::move(bytes), PickleOptions(), &doc_));
  root_ = doc_.root();
  if (!IsClass(doc_, root_, kMetadataModule, "Metadata")) {
    return BadShape(".metadata", "the pickle holds a " + TypeName(doc_, root_) +
                                     ", not a torch.distributed.checkpoint.metadata.Metadata");
  }
  const PyValue sdm = doc_.Field(root_, "state_dict_metadata");
  if (!sdm.is(Kind::kDict)) {
    return BadShape("state_dict_metadata", "a " + TypeName(doc_, sdm) + ", not a dict");
  }
  const PySpan items = doc_.Items(sdm);
  for (size_t i = 0; i + 1 < items.size; i += 2) {
    if (!items[i].is(Kind::kStr)) {
      return BadShape("state_dict_metadata",
                      "a key is a " + TypeName(doc_, items[i]) + ", not a str");
    }
    CKPTSPEC_RETURN_IF_ERROR(ReadTensor(doc_.Str(items[i]), items[i + 1]));
  }
  const PyValue version = doc_.Field(root_, "version");
  if (version.is(Kind::kStr)) version_ = doc_.Str(version);
  return CheckStorage();
}

Status DcpMetadata::ReadTensor(std::string_view fqn, PyValue value) {
  const std::string where = "state_dict_metadata[" + QuotedName(fqn) + "]";
  if (IsClass(doc_, value, kMetadataModule, "BytesStorageMetadata")) {
    bytes_items_.push_back(fqn);
    return Status::OK();
  }
  if (!IsClass(doc_, value, kMetadataModule, "TensorStorageMetadata")) {
    return BadShape(where, "a " + TypeName(doc_, value) +
                               ", not a TensorStorageMetadata or BytesStorageMetadata");
  }
  DcpTensor t;
  t.fqn = fqn;
  const PyValue props = doc_.Field(value, "properties");
  if (!IsClass(doc_, props, kMetadataModule, "TensorProperties")) {
    return BadShape(where + ".properties", "a " + TypeName(doc_, props) + ", not TensorProperties");
  }
  const PyValue dtype = doc_.Field(props, "dtype");
  const PickleClass* dc = doc_.ClassOf(dtype);
  if (!dtype.is(Kind::kGlobal) || dc->role != GlobalRole::kDType) {
    return BadShape(where + ".properties.dtype",
                    "a " + TypeName(doc_, dtype) + ", not a torch.dtype");
  }
  t.dtype = dc->dtype;
  t.size = doc_.Field(value, "size");
  if (!IsIntTuple(doc_, t.size)) {
    return BadShape(where + ".size", "a " + TypeName(doc_, t.size) + ", not a torch.Size");
  }
  t.chunks = doc_.Field(value, "chunks");
  if (!t.chunks.is(Kind::kList) && !t.chunks.is(Kind::kTuple)) {
    return BadShape(where + ".chunks", "a " + TypeName(doc_, t.chunks) + ", not a list");
  }
  const PySpan chunks = doc_.Items(t.chunks);
  for (size_t c = 0; c < chunks.size; ++c) {
    if (!IsClass(doc_, chunks[c], kMetadataModule, "ChunkStorageMetadata")) {
      return BadShape(where + ".chunks[" + std::to_string(c) + "]",
                      "a " + TypeName(doc_, chunks[c]) + ", not a ChunkStorageMetadata");
    }
    for (const char* field : {"offsets", "sizes"}) {
      const PyValue dims = doc_.Field(chunks[c], field);
      if (!IsIntTuple(doc_, dims)) {
        return BadShape(where + ".chunks[" + std::to_string(c) + "]." + field,
                        "a " + TypeName(doc_, dims) + ", not a torch.Size");
      }
    }
  }
  tensors_.push_back(t);
  return Status::OK();
}

Status DcpMetadata::CheckStorage() {
  const PyValue sd = doc_.Field(root_, "storage_data");
  if (!sd.is(Kind::kDict)) {
    return Status::NotSupported("storage_data is a " + TypeName(doc_, sd) +
                                ", not the dict of _StorageInfo that DCP's FileSystemWriter "
                                "writes");
  }
  storage_ = doc_.Items(sd);
  for (size_t i = 0; i + 1 < storage_.size; i += 2) {
    const std::string where = "storage_data entry " + std::to_string(i / 2);
    const PyValue key = storage_[i], info = storage_[i + 1];
    if (!IsClass(doc_, key, kMetadataModule, "MetadataIndex")) {
      return BadShape(where, "its key is a " + TypeName(doc_, key) + ", not a MetadataIndex");
    }
    const PyValue fqn = doc_.Field(key, "fqn");
    const PyValue offset = doc_.Field(key, "offset");
    if (!fqn.is(Kind::kStr)) return BadShape(where + ".fqn", "a " + TypeName(doc_, fqn));
    if (!offset.is(Kind::kNone) && !IsIntTuple(doc_, offset)) {
      return BadShape(where + " (" + QuotedName(doc_.Str(fqn)) + ").offset",
                      "a " + TypeName(doc_, offset) + ", not a torch.Size or None");
    }
    if (!IsClass(doc_, info, "torch.distributed.checkpoint.filesystem", "_StorageInfo")) {
      return BadShape(where + " (" + QuotedName(doc_.Str(fqn)) + ")",
                      "its value is a " + TypeName(doc_, info) + ", not a _StorageInfo");
    }
    const PyValue path = doc_.Field(info, "relative_path");
    const PyValue file_offset = doc_.Field(info, "offset");
    const PyValue length = doc_.Field(info, "length");
    if (!path.is(Kind::kStr) || !file_offset.is(Kind::kInt) || !length.is(Kind::kInt)) {
      return BadShape(where + " (" + QuotedName(doc_.Str(fqn)) + ")",
                      "relative_path, offset and length must be str, int and int; they are " +
                          TypeName(doc_, path) + ", " + TypeName(doc_, file_offset) + " and " +
                          TypeName(doc_, length));
    }
  }
  return Status::OK();
}

DcpStorageEntry DcpMetadata::storage(size_t i) const {
  DcpStorageEntry e;
  const PyValue key = storage_[2 * i], info = storage_[2 * i + 1];
  e.fqn = doc_.Str(doc_.Field(key, "fqn"));
  e.offset = doc_.Field(key, "offset");
  e.relative_path = doc_.Str(doc_.Field(info, "relative_path"));
  e.offset_in_file = doc_.Int(doc_.Field(info, "offset"));
  e.length = doc_.Int(doc_.Field(info, "length"));
  const PyValue transforms = doc_.Field(info, "transform_descriptors");
  e.transformed = !transforms.is(Kind::kNone) && doc_.Len(transforms) > 0;
  return e;
}

std::vector<std::string> DcpMetadata::extra_attributes() const {
  std::vector<std::string> names;
  const PySpan extras = doc_.Items(doc_.Extras(root_));
  for (size_t i = 0; i + 1 < extras.size; i += 2) names.emplace_back(doc_.Str(extras[i]));
  return names;
}

Dims DcpMetadata::Shape(PyValue tuple) const {
  Dims dims;
  for (const PyValue& d : doc_.Items(tuple)) dims.push_back(doc_.Int(d));
  return dims;
}

Box DcpMetadata::ChunkBox(PyValue chunk) const {
  return Box{Shape(doc_.Field(chunk, "offsets")), Shape(doc_.Field(chunk, "sizes"))};
}

}  // namespace ckptspec
