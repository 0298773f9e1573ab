#include "formats/dcp_metadata.h"

#include "formats/pickle_globals.h"
#include "formats/pickle_reader.h"

#include <utility>

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

constexpr std::string_view kMetadataModule = "torch.distributed.checkpoint.metadata";

// Whether `v` is an object of class `c` (classes are compared by identity: the whitelist holds
// each once).
bool IsClass(const PickleDocument& doc, PyValue v, const PickleClass* c) {
  return v.is(Kind::kObject) && doc.ClassOf(v) == c;
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

// DCP's classes in the whitelist, and where the fields read on every entry sit in their objects
// (the whitelist's order), found once.
struct DcpClasses {
  const PickleClass *metadata, *tensor, *bytes, *properties, *chunk, *index, *info;
  size_t chunk_offsets, chunk_sizes;
  size_t index_fqn, index_offset;
  size_t info_path, info_offset, info_length, info_transforms;
};

const DcpClasses& Dcp() {
  static const DcpClasses kDcp = [] {
    DcpClasses d{};
    d.metadata = FindPickleGlobal(kMetadataModule, "Metadata");
    d.tensor = FindPickleGlobal(kMetadataModule, "TensorStorageMetadata");
    d.bytes = FindPickleGlobal(kMetadataModule, "BytesStorageMetadata");
    d.properties = FindPickleGlobal(kMetadataModule, "TensorProperties");
    d.chunk = FindPickleGlobal(kMetadataModule, "ChunkStorageMetadata");
    d.index = FindPickleGlobal(kMetadataModule, "MetadataIndex");
    d.info = FindPickleGlobal("torch.distributed.checkpoint.filesystem", "_StorageInfo");
    d.chunk_offsets = FieldIndex(*d.chunk, "offsets");
    d.chunk_sizes = FieldIndex(*d.chunk, "sizes");
    d.index_fqn = FieldIndex(*d.index, "fqn");
    d.index_offset = FieldIndex(*d.index, "offset");
    d.info_path = FieldIndex(*d.info, "relative_path");
    d.info_offset = FieldIndex(*d.info, "offset");
    d.info_length = FieldIndex(*d.info, "length");
    d.info_transforms = FieldIndex(*d.info, "transform_descriptors");
    return d;
  }();
  return kDcp;
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
  if (!IsClass(doc_, root_, Dcp().metadata)) {
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
  if (IsClass(doc_, value, Dcp().bytes)) {
    bytes_items_.push_back(fqn);
    return Status::OK();
  }
  if (!IsClass(doc_, value, Dcp().tensor)) {
    return BadShape(where, "a " + TypeName(doc_, value) +
                               ", not a TensorStorageMetadata or BytesStorageMetadata");
  }
  DcpTensor t;
  t.fqn = fqn;
  const PyValue props = doc_.Field(value, "properties");
  if (!IsClass(doc_, props, Dcp().properties)) {
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
  const Dims shape = Shape(t.size);
  if (shape.size() > kMaxDcpTensorAxes) {
    return Status::NotSupported(where + ".size: " + std::to_string(shape.size()) +
                                " axes; ckptspec reads tensors of at most " +
                                std::to_string(kMaxDcpTensorAxes));
  }
  int64_t volume = 0;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] < 0) {
      return BadShape(where + ".size",
                      DimsToString(shape) + ": axis " + std::to_string(a) + " is negative");
    }
  }
  if (!CheckedVolume(shape, &volume)) {
    return BadShape(where + ".size", DimsToString(shape) + ": more elements than int64 counts");
  }
  t.chunks = doc_.Field(value, "chunks");
  if (!t.chunks.is(Kind::kList) && !t.chunks.is(Kind::kTuple)) {
    return BadShape(where + ".chunks", "a " + TypeName(doc_, t.chunks) + ", not a list");
  }
  const PySpan chunks = doc_.Items(t.chunks);
  for (size_t c = 0; c < chunks.size; ++c) {
    if (!IsClass(doc_, chunks[c], Dcp().chunk)) {
      return BadShape(where + ".chunks[" + std::to_string(c) + "]",
                      "a " + TypeName(doc_, chunks[c]) + ", not a ChunkStorageMetadata");
    }
    for (const char* field : {"offsets", "sizes"}) {
      const PyValue dims = doc_.FieldAt(chunks[c], FieldIndex(*Dcp().chunk, field));
      if (!IsIntTuple(doc_, dims)) {
        return BadShape(where + ".chunks[" + std::to_string(c) + "]." + field,
                        "a " + TypeName(doc_, dims) + ", not a torch.Size");
      }
    }
    CKPTSPEC_RETURN_IF_ERROR(CheckChunkGeometry(where, c, t.size, chunks[c]));
  }
  tensors_.push_back(t);
  return Status::OK();
}

Status DcpMetadata::CheckChunkGeometry(const std::string& tensor_where, size_t c, PyValue size,
                                       PyValue chunk) const {
  const PySpan shape = doc_.Items(size);
  const PySpan offsets = doc_.Items(ChunkOffsets(chunk));
  const PySpan sizes = doc_.Items(ChunkSizes(chunk));
  const auto where = [&] { return tensor_where + ".chunks[" + std::to_string(c) + "]"; };
  const auto described = [&] {
    return "offsets " + DimsToString(Shape(ChunkOffsets(chunk))) + " and sizes " +
           DimsToString(Shape(ChunkSizes(chunk)));
  };
  if (offsets.size != shape.size || sizes.size != shape.size) {
    return BadShape(where(), described() + " have " + std::to_string(offsets.size) + " and " +
                                 std::to_string(sizes.size) + " axes; the tensor's size " +
                                 DimsToString(Shape(size)) + " has " + std::to_string(shape.size));
  }
  for (size_t a = 0; a < shape.size; ++a) {
    const int64_t extent = doc_.Int(shape[a]), lo = doc_.Int(offsets[a]), n = doc_.Int(sizes[a]);
    if (lo < 0 || n < 0) {
      return BadShape(where(), described() + ": axis " + std::to_string(a) + " is negative");
    }
    if (lo > extent || n > extent - lo) {
      return BadShape(where(), described() + " reach past the tensor's size " +
                                   DimsToString(Shape(size)) + " on axis " + std::to_string(a));
    }
  }
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
    const auto where = [i] { return "storage_data entry " + std::to_string(i / 2); };  // errors
    const PyValue key = storage_[i], info = storage_[i + 1];
    if (!IsClass(doc_, key, Dcp().index)) {
      return BadShape(where(), "its key is a " + TypeName(doc_, key) + ", not a MetadataIndex");
    }
    const PyValue fqn = doc_.FieldAt(key, Dcp().index_fqn);
    const PyValue offset = doc_.FieldAt(key, Dcp().index_offset);
    if (!fqn.is(Kind::kStr)) return BadShape(where() + ".fqn", "a " + TypeName(doc_, fqn));
    if (!offset.is(Kind::kNone) && !IsIntTuple(doc_, offset)) {
      return BadShape(where() + " (" + QuotedName(doc_.Str(fqn)) + ").offset",
                      "a " + TypeName(doc_, offset) + ", not a torch.Size or None");
    }
    if (!IsClass(doc_, info, Dcp().info)) {
      return BadShape(where() + " (" + QuotedName(doc_.Str(fqn)) + ")",
                      "its value is a " + TypeName(doc_, info) + ", not a _StorageInfo");
    }
    const PyValue path = doc_.FieldAt(info, Dcp().info_path);
    const PyValue file_offset = doc_.FieldAt(info, Dcp().info_offset);
    const PyValue length = doc_.FieldAt(info, Dcp().info_length);
    if (!path.is(Kind::kStr) || !file_offset.is(Kind::kInt) || !length.is(Kind::kInt)) {
      return BadShape(where() + " (" + QuotedName(doc_.Str(fqn)) + ")",
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
  const DcpClasses& f = Dcp();
  e.fqn = doc_.Str(doc_.FieldAt(key, f.index_fqn));
  e.offset = doc_.FieldAt(key, f.index_offset);
  e.relative_path = doc_.Str(doc_.FieldAt(info, f.info_path));
  e.offset_in_file = doc_.Int(doc_.FieldAt(info, f.info_offset));
  e.length = doc_.Int(doc_.FieldAt(info, f.info_length));
  const PyValue transforms = doc_.FieldAt(info, f.info_transforms);
  e.transformed = !transforms.is(Kind::kNone) && doc_.Len(transforms) > 0;
  return e;
}

void DcpMetadata::StorageKey(size_t i, std::string_view* fqn, PyValue* offset) const {
  const PyValue key = storage_[2 * i];
  *fqn = doc_.Str(doc_.FieldAt(key, Dcp().index_fqn));
  *offset = doc_.FieldAt(key, Dcp().index_offset);
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

PyValue DcpMetadata::ChunkOffsets(PyValue chunk) const {
  return doc_.FieldAt(chunk, Dcp().chunk_offsets);
}

PyValue DcpMetadata::ChunkSizes(PyValue chunk) const {
  return doc_.FieldAt(chunk, Dcp().chunk_sizes);
}

Box DcpMetadata::ChunkBox(PyValue chunk) const {
  return Box{Shape(ChunkOffsets(chunk)), Shape(ChunkSizes(chunk))};
}

}  // namespace ckptspec
