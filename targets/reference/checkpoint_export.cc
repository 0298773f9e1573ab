#include "targets/reference/checkpoint_export.h"

#include <cstring>
#include <memory>
#include <utility>

#include "targets/reference/extent_overlap.h"

namespace ckptspec {
namespace {

// The most ranks an export may declare: ReadExport makes a dict for every rank.
constexpr int64_t kMaxExportWorldSize = int64_t{1} << 16;

void AppendU64(uint64_t value, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t ReadU64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// Appends `bytes` to the data section and returns where they lie.
Extent Append(const void* bytes, size_t size, std::string* data) {
  Extent extent;
  extent.file = 0;
  extent.offset = data->size();
  extent.size = size;
  extent.checksum = Checksum(bytes, size);
  data->append(static_cast<const char*>(bytes), size);
  return extent;
}

// A whole tensor of the checkpoint, requested by rank 0: its buffer sized to the global volume.
Status WholeTensorTemplate(const TensorEntry& t, ShardedTensor* out) {
  int64_t volume = 0;
  if (!CheckedVolume(t.global_shape, &volume) ||
      volume > static_cast<int64_t>(SIZE_MAX / DTypeSize(t.dtype))) {
    return Status::InvalidArgument("tensor '" + t.key + "': global shape " +
                                   DimsToString(t.global_shape) + " is too large to export whole");
  }
  out->spec = WholeTensorSpec(t.key, t.dtype, t.global_shape);
  out->data.assign(static_cast<size_t>(volume) * DTypeSize(t.dtype), 0);
  return Status::OK();
}

// The index and data section of the export of `loaded` (the checkpoint's entries, filled).
Status EncodeExport(const CheckpointMetadata& checkpoint,
                    const std::vector<ShardedStateDict>& loaded, std::string* file) {
  CheckpointMetadata index;
  index.format_version = kSingleIndexFormatVersion;
  index.iteration = checkpoint.iteration;
  index.world_size = checkpoint.world_size;
  index.layout = checkpoint.layout;
  index.common = checkpoint.common;
  std::string data;
  for (size_t r = 0; r < loaded.size(); ++r) {
    for (const ShardedTensor& t : loaded[r].tensors) {
      TensorEntry entry;
      entry.key = t.spec.key;
      entry.dtype = t.spec.dtype;
      entry.global_shape = t.spec.global_shape;
      ChunkEntry chunk;
      chunk.box = t.spec.box();
      chunk.rank = static_cast<int64_t>(r);
      chunk.extent = Append(t.data.data(), t.data.size(), &data);
      entry.chunks.push_back(std::move(chunk));
      index.tensors.push_back(std::move(entry));
    }
    for (const ShardedObject& o : loaded[r].objects) {
      ObjectEntry entry;
      entry.key = o.spec.key;
      entry.global_shape = o.spec.global_shape;
      entry.global_offset = o.spec.global_offset;
      entry.rank = static_cast<int64_t>(r);
      entry.extent = Append(o.data.data(), o.data.size(), &data);
      index.objects.push_back(std::move(entry));
    }
  }
  index.files.push_back(FileEntry{kExportDataFileName, data.size()});
  std::string text;
  try {
    text = EncodeMetadata(index);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("the export's index cannot be written: ") +
                                   e.what());
  }
  file->clear();
  file->reserve(kExportHeaderBytes + text.size() + data.size());
  file->append(kExportMagic, kExportHeaderBytes / 2);
  AppendU64(text.size(), file);
  AppendU64(Checksum(text.data(), text.size()), file);
  *file += text;
  *file += data;
  return Status::OK();
}

// The checks of an export's decoded index beyond DecodeMetadata's (see the header's contracts).
Status CheckExportIndex(const CheckpointMetadata& m, uint64_t data_size, const std::string& path) {
  if (m.world_size > kMaxExportWorldSize) {
    return Status::NotSupported(path + ": world_size " + std::to_string(m.world_size) +
                                " exceeds the " + std::to_string(kMaxExportWorldSize) +
                                " ranks this reader imports");
  }
  if (m.files.size() != 1 || m.files[0].name != kExportDataFileName) {
    return Status::Corruption(path + ": files: an export indexes exactly one file, \"" +
                              kExportDataFileName + "\" (its data section)");
  }
  if (m.files[0].size != data_size) {
    return Status::Corruption(path + ": files[0].size: " + std::to_string(m.files[0].size) +
                              ", but the data section after the index holds " +
                              std::to_string(data_size) + " bytes");
  }
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorEntry& t = m.tensors[i];
    const Box whole{Dims(t.global_shape.size(), 0), t.global_shape};
    if (t.chunks.size() != 1 || t.chunks[0].box != whole) {
      return Status::Corruption(path + ": tensors[" + std::to_string(i) + "] '" + t.key +
                                "': not consolidated (an export holds each tensor as one chunk "
                                "of its whole global shape)");
    }
  }
  return CheckExtentsDisjoint(m, path);
}

// Reads one item's bytes from the data section and verifies its checksum.
Status ReadItem(const RandomAccessFile& file, const std::string& path, uint64_t data_offset,
                const Extent& extent, const std::string& what, void* out) {
  CKPTSPEC_RETURN_IF_ERROR(
      ReadExactly(file, path, data_offset + extent.offset, static_cast<size_t>(extent.size), out));
  if (Checksum(out, static_cast<size_t>(extent.size)) != extent.checksum) {
    return Status::Corruption(path + ": " + what + ": checksum mismatch at offset " +
                              std::to_string(data_offset + extent.offset) + " (the index says " +
                              ChecksumHex(extent.checksum) + ")");
  }
  return Status::OK();
}

}  // namespace

TensorSpec WholeTensorSpec(const std::string& key, DType dtype, const Dims& global_shape) {
  TensorSpec spec;
  spec.key = key;
  spec.dtype = dtype;
  spec.global_shape = global_shape;
  spec.global_offset = Dims(global_shape.size(), 0);
  spec.local_shape = global_shape;
  spec.axis_fragmentations = Dims(global_shape.size(), 1);
  spec.replica_id = ReplicaId{0};
  return spec;
}

bool ReferenceExport::ExportsTensor(const CheckpointMetadata& /*checkpoint*/,
                                    const TensorEntry& /*tensor*/) const {
  return true;
}

Status ReferenceExport::Export(int64_t iteration, Env* env, const std::string& path) {
  CKPTSPEC_RETURN_IF_ERROR(engine_->Finalize());
  CheckpointMetadata checkpoint;
  CKPTSPEC_RETURN_IF_ERROR(engine_->ReadMetadata(iteration, &checkpoint));
  if (checkpoint.world_size > kMaxExportWorldSize) {
    return Status::NotSupported("export of " + IterationDirName(iteration) + ": world_size " +
                                std::to_string(checkpoint.world_size) + " exceeds the " +
                                std::to_string(kMaxExportWorldSize) + " ranks an export holds");
  }
  LoadRequest request;
  request.iteration = iteration;
  request.templates.resize(static_cast<size_t>(checkpoint.world_size));
  for (const TensorEntry& t : checkpoint.tensors) {
    if (!ExportsTensor(checkpoint, t)) continue;
    ShardedTensor whole;
    CKPTSPEC_RETURN_IF_ERROR(WholeTensorTemplate(t, &whole));
    request.templates[0].tensors.push_back(std::move(whole));
  }
  for (const ObjectEntry& o : checkpoint.objects) {
    ShardedObject object;
    object.spec = o.Spec();
    // A rank-local object comes back only to the rank whose value it is.
    const size_t rank = IsRankLocal(object.spec) ? static_cast<size_t>(o.rank) : 0;
    request.templates[rank].objects.push_back(std::move(object));
  }
  LoadResult loaded;
  CKPTSPEC_RETURN_IF_ERROR(engine_->Load(std::move(request), &loaded).WithContext("export"));
  std::string file;
  CKPTSPEC_RETURN_IF_ERROR(EncodeExport(checkpoint, loaded.state, &file));
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, ParentDir(path)));
  return ReplaceFileAtomically(env, path, file);
}

Status ReferenceExport::Import(Env* env, const std::string& path, Engine& into,
                               int64_t* iteration) {
  CheckpointMetadata index;
  std::vector<ShardedStateDict> every_rank;
  CKPTSPEC_RETURN_IF_ERROR(ReadExport(env, path, &index, &every_rank));
  SaveOptions options;
  options.layout = index.layout;
  CKPTSPEC_RETURN_IF_ERROR(
      into.Save(index.iteration, SaveInput(std::move(every_rank)), options).WithContext("import"));
  *iteration = index.iteration;
  return Status::OK();
}

Status ReadExport(Env* env, const std::string& path, CheckpointMetadata* index,
                  std::vector<ShardedStateDict>* every_rank) {
  uint64_t size = 0;
  CKPTSPEC_RETURN_IF_ERROR(env->GetFileSize(path, &size));
  if (size < kExportHeaderBytes) {
    return Status::Corruption(path + ": " + std::to_string(size) +
                              " bytes, shorter than an export's 32-byte header");
  }
  std::unique_ptr<RandomAccessFile> file;
  CKPTSPEC_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &file));
  uint8_t header[kExportHeaderBytes];
  CKPTSPEC_RETURN_IF_ERROR(ReadExactly(*file, path, 0, sizeof(header), header));
  if (std::memcmp(header, kExportMagic, kExportHeaderBytes / 2) != 0) {
    return Status::Corruption(path +
                              ": not a ckptspec export (it does not begin with "
                              "\"ckptspec-export\\n\")");
  }
  const uint64_t index_size = ReadU64(header + 16);
  const uint64_t index_checksum = ReadU64(header + 24);
  if (index_size > kMaxMetadataBytes || index_size > size - kExportHeaderBytes) {
    return Status::Corruption(path + ": the header's index size " + std::to_string(index_size) +
                              " exceeds the file (" + std::to_string(size) + " bytes) or " +
                              std::to_string(kMaxMetadataBytes) + " bytes");
  }
  std::string text(static_cast<size_t>(index_size), '\0');
  CKPTSPEC_RETURN_IF_ERROR(ReadExactly(*file, path, kExportHeaderBytes, text.size(), text.data()));
  if (Checksum(text.data(), text.size()) != index_checksum) {
    return Status::Corruption(path + ": the index's checksum does not match the header's " +
                              ChecksumHex(index_checksum));
  }
  CheckpointMetadata m;
  CKPTSPEC_RETURN_IF_ERROR(DecodeMetadata(text, path + " (index)", &m));
  const uint64_t data_offset = kExportHeaderBytes + index_size;
  CKPTSPEC_RETURN_IF_ERROR(CheckExportIndex(m, size - data_offset, path));

  std::vector<ShardedStateDict> dicts(static_cast<size_t>(m.world_size));
  for (ShardedStateDict& d : dicts) d.common = m.common;
  for (const TensorEntry& t : m.tensors) {
    ShardedTensor tensor;
    tensor.spec = WholeTensorSpec(t.key, t.dtype, t.global_shape);
    tensor.data.resize(static_cast<size_t>(t.chunks[0].extent.size));
    CKPTSPEC_RETURN_IF_ERROR(ReadItem(*file, path, data_offset, t.chunks[0].extent,
                                      "tensor '" + t.key + "'", tensor.data.data()));
    dicts[0].tensors.push_back(std::move(tensor));
  }
  for (const ObjectEntry& o : m.objects) {
    ShardedObject object;
    object.spec = o.Spec();
    object.data.resize(static_cast<size_t>(o.extent.size));
    CKPTSPEC_RETURN_IF_ERROR(ReadItem(*file, path, data_offset, o.extent,
                                      "object '" + o.UniqueKey() + "'", object.data.data()));
    const size_t rank = IsRankLocal(object.spec) ? static_cast<size_t>(o.rank) : 0;
    dicts[rank].objects.push_back(std::move(object));
  }
  *index = std::move(m);
  *every_rank = std::move(dicts);
  return Status::OK();
}

}  // namespace ckptspec
