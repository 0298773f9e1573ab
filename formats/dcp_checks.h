// The consistency checks of a PyTorch DCP index (`ckptspec verify` on a DCP or Megatron torch_dist
// directory), over a shape-checked .metadata (dcp_metadata.h) and the sizes of the directory's
// files. No data is read here (dcp_data.h reads it).
//
// Findings, each naming the tensor, the box (global coordinates) or the file:
//  - tiling: every tensor's chunks (each with the tensor's axes and inside it: DcpMetadata::Read
//    refuses any other) do not overlap and cover it exactly (P4 over the chunk index,
//    model/validate.h: the first uncovered or doubly covered boxes are reported); a tensor with
//    elements and no chunk is reported;
//  - storage: every chunk and every bytes item has a storage_data entry, and every entry belongs
//    to a chunk or a bytes item (at most one entry each);
//  - files: every entry names a plain file of the directory (no path separator, not "." or
//    ".."), that file exists, the entry's [offset, offset + length) lies inside it, and no two
//    entries share a byte of one file.
// Entries with transform descriptors (compressed items) are counted, their data not interpreted.
// At most kMaxFindingsPerCheck findings of one check are listed; one more line counts the rest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/dcp_metadata.h"

namespace ckptspec {

inline constexpr size_t kMaxFindingsPerCheck = 50;

struct DcpIndexReport {
  int64_t tensors = 0;
  int64_t chunks = 0;
  int64_t bytes_items = 0;
  int64_t storage_entries = 0;
  int64_t transformed_entries = 0;
  std::vector<std::string> findings;
  bool ok() const { return findings.empty(); }
};

// The size of file `name` of the checkpoint directory; false when it does not exist (or is not a
// regular file: the caller decides what it can open).
using FileSizeLookup = std::function<bool(std::string_view name, uint64_t* size)>;

// For each chunk of each tensor, the storage entry holding its bytes (an index for
// DcpMetadata::storage), or -1; and for each bytes item likewise. Built once, in linear time.
struct DcpStorageIndex {
  std::vector<std::vector<int64_t>> chunk_entries;  // [tensor][chunk]
  std::vector<int64_t> bytes_entries;               // [bytes item]
  std::vector<uint8_t> entry_used;                  // [entry]: claimed by a chunk or bytes item
  std::vector<size_t> duplicate_entries;            // entries whose key an earlier entry has
};
DcpStorageIndex IndexDcpStorage(const DcpMetadata& md);

// The checks above, into `report`. When `index` is not null it receives the storage index the
// checks built (IndexDcpStorage), so that a caller reading data need not build it again.
void CheckDcpIndex(const DcpMetadata& md, const FileSizeLookup& file_size, DcpIndexReport* report,
                   DcpStorageIndex* index = nullptr);

// A name DCP's FileSystemWriter could have written: not empty, ".", or "..", and without a path
// separator or NUL. Only such names are ever opened.
bool IsPlainFileName(std::string_view name);

// The writer rank DCP's file name encodes ("__3_0.distcp" -> 3), or -1.
int64_t WriterRankOfFile(std::string_view relative_path);

}  // namespace ckptspec
