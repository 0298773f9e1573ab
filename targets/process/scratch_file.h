// The scratch files that carry entry bytes between the harness and an adapter (docs/PROTOCOL.md,
// "Entries"). Plain POSIX files, not synced: they live for one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/status.h"

namespace ckptspec {

// Creates or truncates `path` and writes `size` bytes. IOError naming the file on failure.
Status WriteScratchFile(const std::string& path, const void* data, size_t size);

// Reads the whole file. NotFound when it does not exist; Corruption when it is larger than
// `max_size` (checked before allocating); IOError otherwise.
Status ReadScratchFile(const std::string& path, uint64_t max_size, std::string* out);

}  // namespace ckptspec
