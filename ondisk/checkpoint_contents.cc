#include "ondisk/checkpoint_contents.h"

#include <algorithm>
#include <new>
#include <unordered_map>
#include <utility>

#include "formats/dcp_checks.h"
#include "formats/dcp_metadata.h"
#include "formats/torch_save_archive.h"
#include "formats/torch_tensor_item.h"
#include "ondisk/dcp_index_limits.h"
#include "ondisk/file_byte_source.h"

namespace ckptspec {
Status CheckpointContents::Open(Env* env, const std::string& root, const ResourceLimits& limits,
                                std::unique_ptr<CheckpointContents>* out) {
  std::unique_ptr<CheckpointContents> c(new CheckpointContents());
  c->env_ = env;
  DetectedCheckpoint detected;
  CKPTSPEC_RETURN_IF_ERROR(DetectCheckpoint(env, root, &detected));
  c->kind_ = detected.kind;
  if (detected.kind == CheckpointKind::kReference) {
    return Status::InvalidArgument(
        root +
        ": a checkpoint in ckptspec's reference format, which the reference's reader "
        "opens (OpenReferenceContents); this reader opens DCP and torch_dist checkpoints");
  }
  try {
    c->dir_ = detected.index_dir;
    CKPTSPEC_RETURN_IF_ERROR(c->OpenDcp(limits));
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("reading the index of " + root + ": out of memory");
  }
  *out = std::move(c);
  return Status::OK();
}

Status CheckpointContents::OpenDcp(const ResourceLimits& limits) {
  // What `ckptspec verify` refuses or reports is refused here, before any data is read: the
  // index's limits, any finding of its consistency checks (overlapping or missing chunks,
  // entries outside their files or sharing bytes), and reads beyond max_read_ratio.
  const std::string path = JoinPath(dir_, ".metadata");
  DcpMetadata md;
  CKPTSPEC_RETURN_IF_ERROR(ReadDcpIndex(env_, dir_, limits, &md));
  DcpIndexReport checked;
  DcpStorageIndex index;
  CheckDcpIndex(
      md,
      [&](std::string_view name, uint64_t* size) {
        return env_->GetFileSize(JoinPath(dir_, std::string(name)), size).ok();
      },
      &checked, &index);
  if (!checked.ok()) {
    const size_t more = checked.findings.size() - 1;
    return Status::Corruption(
        path + ": " + checked.findings.front() +
        (more > 0 ? " (and " + std::to_string(more) + " more finding(s))" : std::string()) +
        "; ckptspec verify lists the findings, diff compares only checkpoints it finds sound");
  }
  const DcpReadBudget budget = MeasureDcpReads(env_, dir_, md, index);
  CKPTSPEC_RETURN_IF_ERROR(CheckDcpReadRatio(dir_, budget, limits));
  stored_bytes_ = budget.stored;
  std::unordered_map<std::string_view, size_t> file_ids;
  auto bytes_of = [&](size_t e) {
    const DcpStorageEntry entry = md.storage(e);
    auto [it, inserted] = file_ids.emplace(entry.relative_path, files_.size());
    if (inserted) files_.emplace_back(entry.relative_path);
    return StoredBytes{it->second,
                       static_cast<uint64_t>(std::max<int64_t>(0, entry.offset_in_file)),
                       static_cast<uint64_t>(std::max<int64_t>(0, entry.length)), true};
  };
  for (size_t t = 0; t < md.tensors().size(); ++t) {
    const DcpTensor& dcp = md.tensors()[t];
    StoredTensor tensor;
    tensor.key = std::string(dcp.fqn);
    tensor.dtype = dcp.dtype;
    tensor.shape = md.Shape(dcp.size);
    const PySpan chunks = md.doc().Items(dcp.chunks);
    for (size_t c = 0; c < chunks.size; ++c) {
      const int64_t e = index.chunk_entries[t][c];  // >= 0: the storage check found none missing
      tensor.chunks.push_back({md.ChunkBox(chunks[c]), bytes_of(static_cast<size_t>(e))});
    }
    tensors_.push_back(std::move(tensor));
  }
  for (size_t b = 0; b < md.bytes_items().size(); ++b) {
    blobs_.push_back(
        {std::string(md.bytes_items()[b]), bytes_of(static_cast<size_t>(index.bytes_entries[b]))});
  }
  return Status::OK();
}

std::unique_ptr<CheckpointContents> CheckpointContents::FromIndex(Env* env, ContentsIndex index) {
  std::unique_ptr<CheckpointContents> c(new CheckpointContents());
  c->env_ = env;
  c->kind_ = index.kind;
  c->dir_ = std::move(index.dir);
  c->files_ = std::move(index.files);
  c->tensors_ = std::move(index.tensors);
  c->blobs_ = std::move(index.blobs);
  c->AddStoredBytesOfFiles();
  return c;
}

void CheckpointContents::AddStoredBytesOfFiles() {
  for (size_t f = 0; f < files_.size(); ++f) {
    uint64_t stored = 0;
    if (env_->GetFileStoredSize(FilePath(f), &stored).ok()) stored_bytes_ += stored;
  }
}

std::string CheckpointContents::FilePath(size_t file) const { return JoinPath(dir_, files_[file]); }

Status CheckpointContents::ReadChunk(const StoredTensor& tensor, const StoredChunk& chunk,
                                     std::string* out) const {
  std::unique_ptr<FileByteSource> file;
  CKPTSPEC_RETURN_IF_ERROR(FileByteSource::Open(env_, FilePath(chunk.bytes.file), &file));
  WindowByteSource window;
  CKPTSPEC_RETURN_IF_ERROR(
      WindowByteSource::Make(*file, chunk.bytes.offset, chunk.bytes.length, &window));
  int64_t elements = 0;
  if (!CheckedVolume(chunk.box.shape, &elements)) {
    return Status::Corruption(tensor.key + ": chunk " + BoxToString(chunk.box) + " overflows");
  }
  const uint64_t expected = static_cast<uint64_t>(elements) * tensor.dtype->element_bytes;
  uint64_t offset = 0;
  if (chunk.bytes.torch_save) {
    TorchTensorItem item;
    CKPTSPEC_RETURN_IF_ERROR(ReadTorchTensorItem(window, ZipLimits(), &item));
    if (item.dtype != tensor.dtype || item.shape != chunk.box.shape) {
      return Status::Corruption(window.name() + ": holds " + item.dtype->name + " " +
                                DimsToString(item.shape) + ", the index declares " +
                                tensor.dtype->name + " " + DimsToString(chunk.box.shape));
    }
    offset = item.data_offset;
  } else if (chunk.bytes.length != expected) {
    return Status::Corruption(window.name() + ": " + std::to_string(chunk.bytes.length) +
                              " bytes for " + std::to_string(expected) + " bytes of elements");
  }
  out->resize(expected);
  return window.Read(offset, expected, out->data());
}

Status CheckpointContents::ReadBlob(const StoredBlob& blob, std::string* out) const {
  std::unique_ptr<FileByteSource> file;
  CKPTSPEC_RETURN_IF_ERROR(FileByteSource::Open(env_, FilePath(blob.bytes.file), &file));
  WindowByteSource window;
  CKPTSPEC_RETURN_IF_ERROR(
      WindowByteSource::Make(*file, blob.bytes.offset, blob.bytes.length, &window));
  out->clear();
  if (!blob.bytes.torch_save) {
    out->resize(blob.bytes.length);
    return window.Read(0, blob.bytes.length, out->data());
  }
  TorchSaveArchive archive;
  CKPTSPEC_RETURN_IF_ERROR(OpenTorchSaveArchive(window, ZipLimits(), &archive));
  for (const ZipEntry& entry : archive.entries) {  // sorted by name
    const std::string relative = entry.name.substr(archive.prefix.size() + 1);
    if (relative == ".data/serialization_id") continue;  // random per save
    std::string content;
    CKPTSPEC_RETURN_IF_ERROR(ReadSmallEntry(window, entry, blob.bytes.length, &content));
    *out += relative + '\0' + std::to_string(content.size()) + '\0' + content;
  }
  return Status::OK();
}

}  // namespace ckptspec
