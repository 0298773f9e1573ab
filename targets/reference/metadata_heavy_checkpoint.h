// A sound single-index checkpoint whose size is nearly all metadata: many tensors of many tiny
// chunks, for measuring what reading a large metadata.json costs (benches and memory-limit
// tests). The metadata text is written as EncodeMetadata spells it (sorted keys, one member per
// line) but streamed, so that making a 200 MB file does not itself need a 200 MB JSON tree.
#pragma once

#include <cstdint>
#include <string>

#include "model/status.h"
#include "base/env.h"

namespace ckptspec {

struct MetadataHeavyShape {
  int64_t tensors = 100;
  int64_t chunks_per_tensor = 100;  // each chunk is one row of 2 bfloat16 elements (4 bytes)
  int64_t world_size = 8;           // chunk c of a tensor is written by rank c % world_size
};

// Writes iteration 1 of a checkpoint under `root` (tracker, metadata.json and its checksum, one
// shard file per rank), every chunk with its own bytes and a valid checksum, so that `verify`
// finds nothing. *metadata_bytes receives the size of metadata.json.
Status WriteMetadataHeavyCheckpoint(Env* env, const std::string& root,
                                    const MetadataHeavyShape& shape, uint64_t* metadata_bytes);

}  // namespace ckptspec
