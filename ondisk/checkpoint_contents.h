// A checkpoint's tensors in global coordinates, whatever its format (ckptspec's reference format,
// PyTorch DCP, Megatron torch_dist): for `ckptspec diff`, which compares two checkpoints saved
// under different layouts or in different formats.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/torch_dtype.h"
#include "model/box.h"
#include "ondisk/checkpoint_kind.h"
#include "base/env.h"
#include "base/resource_limits.h"

namespace ckptspec {

// Where a chunk's (or a blob's) bytes are: a range of a file below the index directory, holding
// either the raw row-major elements (reference) or a torch.save archive of them (DCP).
struct StoredBytes {
  size_t file = 0;  // index into CheckpointContents::files
  uint64_t offset = 0;
  uint64_t length = 0;
  bool torch_save = false;
};

struct StoredChunk {
  Box box;
  StoredBytes bytes;
};

struct StoredTensor {
  std::string key;
  const TorchDType* dtype = nullptr;
  Dims shape;
  std::vector<StoredChunk> chunks;
};

// A non-tensor item: a DCP bytes item, a reference object shard.
struct StoredBlob {
  std::string key;
  StoredBytes bytes;
};

// What a checkpoint's index says, read by the reader of its format: the index directory, the
// files below it that hold data, and where each tensor's chunks and each blob are.
struct ContentsIndex {
  CheckpointKind kind = CheckpointKind::kDcp;
  std::string dir;                 // the index directory
  std::vector<std::string> files;  // relative to dir; StoredBytes::file indexes them
  std::vector<StoredTensor> tensors;
  std::vector<StoredBlob> blobs;
};

class CheckpointContents {
 public:
  // Opens the DCP or torch_dist checkpoint at `root` (format recognised by DetectCheckpoint):
  // its index only. A checkpoint in ckptspec's reference format is refused (InvalidArgument):
  // its reader is the reference's (cli/reference_contents.h), which builds the
  // contents with FromIndex. `env` must be a confined view of `root`, and outlive this object.
  static Status Open(Env* env, const std::string& root, const ResourceLimits& limits,
                     std::unique_ptr<CheckpointContents>* out);
  // The contents `index` describes, read through `env` (which must outlive this object). Its
  // stored_bytes() is what the index's files occupy on disk, as far as `env` can tell.
  static std::unique_ptr<CheckpointContents> FromIndex(Env* env, ContentsIndex index);

  CheckpointKind kind() const { return kind_; }
  const std::string& dir() const { return dir_; }  // the index directory
  const std::vector<StoredTensor>& tensors() const { return tensors_; }
  const std::vector<StoredBlob>& blobs() const { return blobs_; }
  // What the files holding its chunks and blobs occupy on disk (allocated blocks): the measure
  // of how much reading them may cost (ResourceLimits::max_read_ratio).
  uint64_t stored_bytes() const { return stored_bytes_; }

  // The chunk's elements, row-major, into `out` (replaced): a torch.save item is unpacked
  // (formats/torch_tensor_item.h) and must hold the tensor's dtype and the chunk's shape.
  Status ReadChunk(const StoredTensor& tensor, const StoredChunk& chunk, std::string* out) const;
  // A blob's content: the raw bytes (reference), or for a torch.save archive its entries' bytes
  // in name order, each after its name, without the entries that differ between two saves of the
  // same object (.data/serialization_id).
  Status ReadBlob(const StoredBlob& blob, std::string* out) const;

 private:
  CheckpointContents() = default;
  Status OpenDcp(const ResourceLimits& limits);
  void AddStoredBytesOfFiles();
  std::string FilePath(size_t file) const;

  Env* env_ = nullptr;
  CheckpointKind kind_ = CheckpointKind::kDcp;
  std::string dir_;
  std::vector<std::string> files_;  // relative to dir_
  std::vector<StoredTensor> tensors_;
  std::vector<StoredBlob> blobs_;
  uint64_t stored_bytes_ = 0;
};

}  // namespace ckptspec
