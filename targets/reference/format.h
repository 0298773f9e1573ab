// The reference checkpointer's on-disk format, versions 1 and 2 (docs/FORMAT.md is the normative
// text). Two index layouts of an iteration directory:
//
//   single index (version 1):
//   <root>/latest_checkpointed_iteration.txt   decimal iteration of the latest complete checkpoint
//   <root>/iter_0000010/metadata.json           CheckpointMetadata as JSON
//   <root>/iter_0000010/metadata.xxh3           16 lowercase hex digits: XXH3-64 of metadata.json
//   <root>/iter_0000010/shard_00003.bin         the chunks rank 3 wrote, back to back
//
//   per-writer index (version 2): no metadata.json; one directory per writing rank (and rank 0)
//   <root>/iter_0000010/writer_00003/shard.bin   the chunks rank 3 wrote
//   <root>/iter_0000010/writer_00003/index.json  CheckpointMetadata of those chunks and objects
//   <root>/iter_0000010/writer_00003/index.xxh3  its checksum
//
// A reader tells the layouts apart by probing the directory: metadata.json present means single
// index; otherwise writer_* directories mean per-writer index.
//
// DecodeMetadata trusts nothing: every field is type-checked, every size and offset is checked
// for overflow and against the declared file sizes (the loader then checks those against the real
// sizes), file names cannot leave the directory, keys are unique. Errors are Corruption naming the
// file and the field ("iter_0000010/metadata.json: tensors[2].chunks[0].offset: ...").
// The text is read with the project's JSON reader (model/json_util.h: nesting at most
// kDefaultMaxJsonDepth levels, no duplicate keys, numbers that fit, kMaxMetadataBytes at most),
// streamed: no tree of the whole document is built, only of one entry at a time, so decoding costs
// the decoded structs plus a bounded amount beyond the text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/resource_limits.h"
#include "model/box.h"
#include "model/dtype.h"
#include "model/json_util.h"
#include "model/sharded.h"
#include "model/status.h"

namespace ckptspec {

// The newest version this reader reads; what each index layout writes.
inline constexpr int kReferenceFormatVersion = 2;
inline constexpr int kSingleIndexFormatVersion = 1;
inline constexpr int kPerWriterIndexFormatVersion = 2;
inline constexpr const char* kReferenceFormatName = "ckptspec-reference";
inline constexpr const char* kTrackerFileName = "latest_checkpointed_iteration.txt";
inline constexpr const char* kMetadataFileName = "metadata.json";
inline constexpr const char* kMetadataChecksumFileName = "metadata.xxh3";
inline constexpr const char* kWriterIndexFileName = "index.json";
inline constexpr const char* kWriterIndexChecksumFileName = "index.xxh3";
inline constexpr const char* kWriterShardFileName = "shard.bin";

enum class IndexLayout { kSingle, kPerWriter };
const char* IndexLayoutName(IndexLayout layout);  // "single", "per-writer"
// Upper bounds checked before reading, so that a hostile size never drives an allocation: the
// index's size (kMaxMetadataBytes, base/resource_limits.h) and its trees' memory.
// What `layout` and `common` may take in memory as trees (the JSON reader's estimate,
// JsonLimits::max_tree_bytes): this many bytes per byte of the index text, plus the allowance.
// A tree can take 30 times its text ("[{},{},...]"); an index whose trees would take more is
// refused.
inline constexpr uint64_t kMaxMetadataTreeBytesPerByte = 4;
inline constexpr uint64_t kMetadataTreeAllowance = uint64_t{64} << 20;
inline constexpr uint64_t kMaxTrackerBytes = 64;
inline constexpr int64_t kMaxIteration = int64_t{1} << 53;

// "iter_0000010" (at least 7 digits, Megatron's spelling).
std::string IterationDirName(int64_t iteration);
// Accepts exactly what IterationDirName produces.
bool ParseIterationDirName(const std::string& name, int64_t* iteration);
// Where a save is assembled before it is renamed into place: "iter_0000010.tmp".
std::string StagingDirName(int64_t iteration);
// Where retention moves a checkpoint before deleting it: "iter_0000010.deleting".
std::string DeletingDirName(int64_t iteration);
// "shard_00003.bin".
std::string ShardFileName(int64_t rank);
// "writer_00003" (at least 5 digits), and its strict parser.
std::string WriterDirName(int64_t rank);
bool ParseWriterDirName(const std::string& name, int64_t* rank);
// A file name that stays inside its directory: non-empty, at most 255 bytes, only [A-Za-z0-9._-],
// not "." or "..".
bool IsSafeFileName(const std::string& name);

// XXH3-64 of a byte range, and its 16-hex-digit spelling.
uint64_t Checksum(const void* data, size_t size);
std::string ChecksumHex(uint64_t checksum);
bool ParseChecksumHex(const std::string& text, uint64_t* checksum);

// The tracker file's content for an iteration, and its strict parser (digits, optional trailing
// whitespace, at most kMaxIteration).
std::string EncodeTracker(int64_t iteration);
Status DecodeTracker(const std::string& text, const std::string& path, int64_t* iteration);

struct FileEntry {
  std::string name;
  uint64_t size = 0;
};

// Where an item's bytes live: a range of one file and its checksum.
struct Extent {
  int64_t file = 0;  // index into CheckpointMetadata::files
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;  // XXH3-64 of the bytes
};

struct ChunkEntry {
  Box box;           // in the tensor's global index space
  int64_t rank = 0;  // the rank that wrote it
  Extent extent;     // row-major bytes of the box
};

struct TensorEntry {
  std::string key;
  DType dtype = DType::kFloat32;
  Dims global_shape;
  std::vector<ChunkEntry> chunks;  // pairwise disjoint
};

// An object as the index records it: a sharded object's shard, or a rank-local object (empty
// global_shape and global_offset: no sharding declared), one per saving rank.
struct ObjectEntry {
  std::string key;
  Dims global_shape;
  Dims global_offset;
  int64_t rank = 0;  // the rank that wrote it; a rank-local object's is the rank whose value it is
  Extent extent;
  ObjectSpec Spec() const;  // the spec it was saved from (no origin or digest)
  // Unique in an index: StoredObjectKey(Spec(), rank).
  std::string UniqueKey() const;
};

struct CheckpointMetadata {
  int format_version = kSingleIndexFormatVersion;
  int64_t iteration = 0;
  int64_t world_size = 0;
  nlohmann::json layout = nlohmann::json::object();
  SharedJson common;  // an object
  std::vector<FileEntry> files;
  std::vector<TensorEntry> tensors;
  std::vector<ObjectEntry> objects;
};

// Deterministic JSON text: exactly nlohmann::json's dump(1) of the index as a tree (sorted
// members, one-space indentation), then a newline; written directly (metadata_encoder.cc). Throws
// nlohmann::json::type_error for a name that is not valid UTF-8, as dump does.
std::string EncodeMetadata(const CheckpointMetadata& metadata);
// Parses and validates; `path` names the file in errors. Never throws. A text the JSON reader
// refuses gives "<path>: <its message>": "...: parse error at byte 18, line 1, column 18: ...",
// "...: common.a.a...a: nests deeper than <kDefaultMaxJsonDepth> levels at ...",
// "...: tensors[0]: duplicate key \"rank\" at ...". When a text has several errors, the one
// reported is the first in this order: the JSON reader's, the top-level members, files, each
// tensor then its chunks, objects.
Status DecodeMetadata(const std::string& text, const std::string& path, CheckpointMetadata* out);
// The same under the reader's `limits` instead of the defaults (max_bytes kMaxMetadataBytes).
Status DecodeMetadata(const std::string& text, const std::string& path, const JsonLimits& limits,
                      CheckpointMetadata* out);
// What DecodeMetadata lets the layout and the common state take as trees in memory
// (JsonLimits::max_tree_bytes) when it reads a text of `text_size` bytes under `limits`.
uint64_t MetadataTreeBound(const JsonLimits& limits, size_t text_size);

// What DecodeMetadata(EncodeMetadata(m), path, limits, out) gives, made from `m` without reading
// the text (decoded_form.cc): the layout and the common state with their numbers typed as the JSON
// reader types them (an integer >= 0 unsigned, a non-finite number null, as dump spells it). It
// holds for an index the decoder accepts, as every index the reference engine writes is
// (decoded_form_test.cc loads checkpoints through both for random runs). False, *out unspecified,
// when the text might be refused under `limits` (over max_bytes; nesting or trees near their
// bounds) or `m` holds a JSON value its text cannot carry back (binary): decode the text instead.
bool DecodedFormOf(const CheckpointMetadata& m, size_t text_size, const JsonLimits& limits,
                   CheckpointMetadata* out);

}  // namespace ckptspec
