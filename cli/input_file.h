// Files a verb reads from a flag (run --expectations, run and replay --plugin). Only regular
// files are read: a FIFO would block the open forever, a device (/dev/zero) would be read without
// end, a directory is a mistake. Each is refused before it is opened, with its kind named.
//
// Contracts:
//  - CheckRegularFile follows symbolic links (the path is the user's own) and is InvalidArgument
//    naming the flag, the path and what it is instead: "--plugin '/tmp/f': a FIFO, not a regular
//    file"; or the reason it cannot be looked at ("No such file or directory").
//  - ReadRegularFile checks the path as above, then opens it without blocking and checks the
//    opened file again (so the file read is the file checked), refuses one of more than
//    `max_bytes` before reading it, and reads it whole into *out.
#pragma once

#include <cstdint>
#include <string>

#include "model/status.h"

namespace ckptspec {

Status CheckRegularFile(const std::string& flag, const std::string& path);
Status ReadRegularFile(const std::string& flag, const std::string& path, uint64_t max_bytes,
                       std::string* out);

}  // namespace ckptspec
