// The reference's consolidated export (targets/target.h, CheckpointExport; docs/SEMANTICS.md §10;
// the file format is docs/FORMAT.md, "Consolidated exports"), over the reference engine's public
// API: Export reads the checkpoint's index (ReferenceEngine::ReadMetadata) and loads every entry
// whole through ReferenceEngine::Load; Import saves what an export holds through Engine::Save.
//
// An export file is a 32-byte header, an index and a data section:
//   bytes [0, 16)       the magic "ckptspec-export\n"
//   bytes [16, 24)      the index's size L, unsigned 64-bit little-endian
//   bytes [24, 32)      XXH3-64 of the index, unsigned 64-bit little-endian
//   bytes [32, 32 + L)  the index: a metadata.json text (format.h) whose one file is the data
//                       section ("data"), with one chunk per tensor covering its global shape
//   the rest            the data section: the items' bytes, back to back
//
// Contracts:
//  - Export writes exactly that, replacing `path` atomically (ReplaceFileAtomically); a
//    checkpoint of more than 65,536 ranks is NotSupported (an export makes a dict per rank). The
//    index keeps the checkpoint's iteration, world size, layout and common state; its tensors are
//    the checkpoint's (those ExportsTensor keeps), its objects all of the checkpoint's, each
//    sharded object by its unique key and each rank-local one with the rank whose value it is.
//  - ReadExport trusts nothing: the file's size against the header, the index's size
//    (kMaxMetadataBytes at most) and checksum, the index as DecodeMetadata checks it, one file
//    named "data" exactly as large as the data section, one whole chunk per tensor, items
//    pairwise disjoint (so reading costs at most the file's size), each item's checksum, a
//    rank-local object's rank below the world size, a world of at most 65,536 ranks. Every error is
//    Corruption (NotSupported for an index version it does not know or a larger world) naming the
//    file and what is wrong.
//  - Import saves the dicts ReadExport gives, synchronously, at the export's iteration, with the
//    export's layout: the checkpoint it writes holds exactly the exported entries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "targets/reference/format.h"
#include "targets/reference/reference_engine.h"
#include "targets/target.h"

namespace ckptspec {

inline constexpr const char kExportMagic[] = "ckptspec-export\n";  // 16 bytes, no terminator used
inline constexpr uint64_t kExportHeaderBytes = 32;
inline constexpr const char* kExportDataFileName = "data";

class ReferenceExport : public CheckpointExport {
 public:
  // `engine` (not owned) outlives this object: the target's engine.
  explicit ReferenceExport(ReferenceEngine* engine) : engine_(engine) {}

  Status Export(int64_t iteration, Env* env, const std::string& path) override;
  Status Import(Env* env, const std::string& path, Engine& into, int64_t* iteration) override;

 protected:
  // The step a mutant replaces: whether the export holds the tensor `tensor` of the checkpoint
  // `checkpoint` (its index). The default keeps every tensor (docs/SEMANTICS.md §10; docs/BUGS.md
  // B32 is an exporter that does not).
  virtual bool ExportsTensor(const CheckpointMetadata& checkpoint, const TensorEntry& tensor) const;

 private:
  ReferenceEngine* engine_;
};

// Reads and checks the export `path` on `env` (see the contracts above): *index gets its index,
// *every_rank one dict per rank of its world, as a save of them would hold the exported
// checkpoint: rank 0 every tensor whole (replica 0, a one-cell regular grid) and every sharded
// object (replica 0), each rank its own rank-local objects, every rank the common state.
Status ReadExport(Env* env, const std::string& path, CheckpointMetadata* index,
                  std::vector<ShardedStateDict>* every_rank);

// The spec of a tensor held whole by one rank: global offset 0, local shape the global shape, a
// one-cell regular grid, main replica.
TensorSpec WholeTensorSpec(const std::string& key, DType dtype, const Dims& global_shape);

}  // namespace ckptspec
