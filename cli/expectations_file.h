// Reading `ckptspec run --expectations FILE` (docs/ADAPTERS.md, "Expectations"): the file, and the
// base files beside it that its "extends" chain names, each read as an input file of the command
// (a regular file of at most kMaxExpectationsFileBytes; cli/input_file.h).
//
// Contracts:
//  - A base is FILE's directory joined with the name "extends" gives (a name without '/', so
//    nothing outside that directory is read). A chain of more than kMaxExpectationsChain files,
//    or one that names a file twice, is an error.
//  - Errors are InvalidArgument or NotFound naming the flag and the file, as the input-file checks
//    word them; an error of the base names FILE and "extends" first.
#pragma once

#include <cstdint>
#include <string>

#include "model/status.h"
#include "runner/expectations.h"

namespace ckptspec {

// The largest expectations file read (they list a few dozen properties).
constexpr uint64_t kMaxExpectationsFileBytes = 1 << 20;
// The most files one chain of "extends" may hold, the first included.
constexpr int kMaxExpectationsChain = 6;

Status ReadExpectationsFile(const std::string& path, Expectations* out);

}  // namespace ckptspec
