// The index files reference engines have read or written, kept with their decoded form and shared
// by every engine of the process: reading an index whose text is byte-for-byte one kept under
// the same reader limits takes the kept form instead of parsing the text again (a resume's probe
// load, then its load; a load of the checkpoint an engine saved; a restarted engine's first load).
// Decoding is a function of the text and the limits alone, so what a read takes is what decoding
// would give; a text that differs in one byte (a crash, a corruption, another writer) is decoded.
// Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "model/json_util.h"
#include "targets/reference/format.h"

namespace ckptspec {

// An index file as read or written: where, its text, the limits it was decoded under, the result.
struct DecodedIndex {
  std::string path;
  std::string text;
  JsonLimits limits;
  CheckpointMetadata metadata;
};

class DecodedIndexCache {
 public:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxTextBytes = size_t{4} << 20;  // per index; longer ones are not kept
  static constexpr size_t kMaxTotalTextBytes = size_t{32} << 20;  // all kept texts together

  // The process's cache.
  static DecodedIndexCache& Shared();

  // True, with the kept decoded form copied into *metadata, when `text` read at `path` is kept
  // under the same limits.
  bool Find(const std::string& path, const std::string& text, const JsonLimits& limits,
            CheckpointMetadata* metadata) const;
  // Keeps `index` as the newest (not when its text is over kMaxTextBytes), replacing one kept at
  // the same path; the oldest are dropped past kMaxEntries or kMaxTotalTextBytes.
  void Keep(DecodedIndex index);

 private:
  mutable std::mutex mu_;
  std::vector<DecodedIndex> entries_;  // oldest first
};

}  // namespace ckptspec
