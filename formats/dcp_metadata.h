// PyTorch DCP's `.metadata` (torch.distributed.checkpoint.metadata.Metadata, pickled by the
// FileSystemWriter), read with the safe pickle reader and checked for shape: every field has the
// type DCP gives it. Whether the index is consistent (chunks tile their tensors, every chunk has
// its bytes) is dcp_checks.h's business.
//
// Every tensor's geometry is validated here, once, so that nothing downstream indexes by an
// unchecked axis count: its size has at most kMaxDcpTensorAxes axes, none negative, and a volume
// that fits in int64; each chunk's offsets and sizes have exactly the tensor's axes, none
// negative, and the chunk lies inside the tensor. Anything else is a named error (Corruption).
//
// Memory: the .metadata bytes, the pickle document (pickle_value.h) and 32 bytes per tensor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/pickle_value.h"
#include "formats/quoted_name.h"
#include "formats/torch_dtype.h"
#include "model/box.h"
#include "model/status.h"

namespace ckptspec {

// The most axes a tensor of a .metadata may have (ckptspec's limit; torch's own tensors stay far
// below it in practice). More is refused when the index is read.
inline constexpr size_t kMaxDcpTensorAxes = 64;

struct DcpTensor {
  std::string_view fqn;
  const TorchDType* dtype = nullptr;
  PyValue size;    // tuple of ints: the global shape
  PyValue chunks;  // list of ChunkStorageMetadata objects (offsets, sizes: tuples of ints)
};

// One item of storage_data: where the bytes of a tensor chunk (offset: its chunk's offsets) or of
// a bytes item (offset None) live.
struct DcpStorageEntry {
  std::string_view fqn;
  PyValue offset;  // tuple of ints, or None
  std::string_view relative_path;
  int64_t offset_in_file = 0;
  int64_t length = 0;
  bool transformed = false;  // transform_descriptors present (compressed or otherwise encoded)
};

class DcpMetadata {
 public:
  // Reads and shape-checks the bytes of a .metadata file (kept), geometry included (above).
  // Errors name the entry and the field: "state_dict_metadata['w'].chunks[3].offsets: a list,
  // not a torch.Size".
  Status Read(std::string bytes);

  const PickleDocument& doc() const { return doc_; }
  const std::vector<DcpTensor>& tensors() const { return tensors_; }
  const std::vector<std::string_view>& bytes_items() const { return bytes_items_; }
  size_t storage_count() const { return storage_.size / 2; }
  // The i-th entry of storage_data (shape-checked by Read); and its key alone.
  DcpStorageEntry storage(size_t i) const;
  void StorageKey(size_t i, std::string_view* fqn, PyValue* offset) const;
  // Metadata.version ("" when absent) and the attributes beyond DCP's own (Megatron's), by name.
  std::string_view version() const { return version_; }
  std::vector<std::string> extra_attributes() const;

  // A chunk's box: offsets and sizes as Dims; and the tuples themselves.
  Box ChunkBox(PyValue chunk) const;
  PyValue ChunkOffsets(PyValue chunk) const;
  PyValue ChunkSizes(PyValue chunk) const;
  Dims Shape(PyValue tuple) const;

 private:
  Status ReadTensor(std::string_view fqn, PyValue value);
  // The geometry of chunk `c` of the tensor at `tensor_where` of global `size` (class comment).
  Status CheckChunkGeometry(const std::string& tensor_where, size_t c, PyValue size,
                            PyValue chunk) const;
  Status CheckStorage();

  PickleDocument doc_;
  PyValue root_;
  std::vector<DcpTensor> tensors_;
  std::vector<std::string_view> bytes_items_;
  PySpan storage_;  // storage_data's keys and values, interleaved
  std::string_view version_;
};

}  // namespace ckptspec
