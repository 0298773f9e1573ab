// The resource policy for untrusted input: how much `ckptspec verify`, `ckptspec verify-plan` and
// the reference loader accept from a checkpoint or a plan dump before they refuse it. Every limit
// is here, once: its default, the flag that overrides it, and its meaning, in one table
// (kResourceLimitTable) that drives the command-line flags and that docs/SECURITY.md repeats
// (resource_limits_test.cc fails when the two differ).
//
// Exceeding a limit is a named error: the message names the limit and its flag, e.g.
//   "iter_0000010/metadata.json: 20000000 chunks and objects exceed max_chunks = 16777216
//    (--max-chunks raises it)"
// (NotSupported: the input may be sound, this reader declines it under the limits in force).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/json_util.h"
#include "model/status.h"

namespace ckptspec {

// The largest index (metadata.json, index.json) or plan dump read by default.
inline constexpr uint64_t kMaxMetadataBytes = uint64_t{1} << 30;

struct ResourceLimits {
  // Deepest nesting of arrays and objects in metadata.json, index.json or a plan dump.
  uint64_t max_json_depth = static_cast<uint64_t>(kDefaultMaxJsonDepth);
  // Largest metadata.json, index.json or plan dump read (checked before it is read).
  uint64_t max_metadata_bytes = kMaxMetadataBytes;
  // Most tensor chunks plus objects in one iteration's index (all writers' indexes together), or
  // entries (tensors plus objects, all ranks) in a plan dump.
  uint64_t max_chunks = uint64_t{1} << 24;
  // Most bytes of data read per byte the checkpoint occupies on disk (its files' allocated
  // blocks): a sparse file declaring 64 GiB on 100 KB of disk is refused before it is read.
  uint64_t max_read_ratio = 16;

  // The JSON reader's limits under this policy.
  JsonLimits json() const;
};

struct ResourceLimitInfo {
  const char* name;                 // "max_chunks": the field, and the name in errors
  const char* flag;                 // "--max-chunks"
  uint64_t ResourceLimits::*field;  // its value in a ResourceLimits
  uint64_t min, max;                // the values the flag accepts
  const char* meaning;              // one sentence, as in --help and docs/SECURITY.md
};

inline constexpr size_t kResourceLimitCount = 4;
extern const ResourceLimitInfo kResourceLimitTable[kResourceLimitCount];

// The table's entry for `field`.
const ResourceLimitInfo& LimitInfo(uint64_t ResourceLimits::*field);

// NotSupported: "<what>: <value> <noun> exceed <name> = <limit> (<flag> raises it)".
// `noun` describes the value ("bytes", "chunks and objects", "bytes to read").
Status LimitExceeded(const std::string& what, uint64_t value, const char* noun,
                     uint64_t ResourceLimits::*field, const ResourceLimits& limits);

}  // namespace ckptspec
