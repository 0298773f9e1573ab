// Static checks of a reference-format checkpoint directory (docs/FORMAT.md), without loading it
// into any template: what `ckptspec verify DIR` prints.
//
// For the tracker's iteration (or every complete iteration directory with `all_iterations`):
//  - the tracker parses and names a complete iteration directory;
//  - metadata.json matches metadata.xxh3 and passes the format's schema checks (DecodeMetadata),
//    every shard file has the size the metadata records, and no two items share a byte of a
//    file (ReferenceEngine::ReadMetadata);
//  - every chunk's and object's bytes match their XXH3-64 checksum;
//  - coverage: the chunks of every tensor tile its global shape exactly (no gap, no overlap: P4
//    over the chunk index), and every object's shards cover its global shape.
// Findings are collected, never thrown; a finding names the file and, for data, the key and box.
//
// Untrusted input (docs/SECURITY.md): everything below `root` is read through a confined view
// of `env` (env.h: NewConfinedView), so a symbolic link, a FIFO or a device below the root is a
// finding naming it, never followed or opened. An index beyond `limits` (resource_limits.h) is a
// finding naming the limit and the flag that raises it; nothing is then read of that iteration's
// data. Data is read in blocks of kStreamBlockBytes: memory is the decoded index plus one block,
// whatever the chunks' sizes. A checksum mismatch prints the expected checksum, the file, the
// offset and the size, never a value computed from the bytes read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/status.h"
#include "base/env.h"
#include "base/resource_limits.h"

namespace ckptspec {

struct VerifyReport {
  std::vector<int64_t> iterations;  // the iterations checked
  int64_t chunks_checked = 0;       // tensor chunks whose checksum was verified
  int64_t objects_checked = 0;
  uint64_t bytes_checked = 0;
  std::vector<std::string> findings;  // empty: the checkpoint is sound
  bool ok() const { return findings.empty(); }
};

// Errors (non-OK Status) only for what stops the check itself (the root is not a directory or
// cannot be listed, memory runs out); everything wrong with the checkpoint is a finding.
Status VerifyCheckpoint(Env* env, const std::string& root, bool all_iterations,
                        const ResourceLimits& limits, VerifyReport* report);
// The same under the default limits.
Status VerifyCheckpoint(Env* env, const std::string& root, bool all_iterations,
                        VerifyReport* report);

}  // namespace ckptspec
