// A file a verb writes from a flag (run --json / --junit, layout --signature-out): opened while
// the arguments are checked, before any work, so a path that cannot be written is reported at
// once, not after a run of minutes; written at the end with every write checked, so a full disk
// is an error, not a silently short report.
//
// Contracts:
//  - Open opens `path` for writing, creating it (mode 0666 less the umask), without blocking: a
//    FIFO with no reader is refused, not waited for. An existing file keeps its content until
//    WriteAndClose replaces it, so arguments rejected after Open leave an earlier report intact. Errors are InvalidArgument naming the flag,
//    the path and the reason: "--json '/nonexistent/dir/x.json': cannot open for writing: No
//    such file or directory".
//  - WriteAndClose writes all of `text` (short writes and interruptions are retried) and closes
//    the file; a failed write or close (ENOSPC, EIO, ...) is IOError naming the flag, the path
//    and the reason: "--junit '/dev/full': cannot write: No space left on device".
//  - An OutputFile that was never opened writes nothing and succeeds (the flag was not given).
//    The destructor closes a file still open.
#pragma once

#include <string>

#include "model/status.h"

namespace ckptspec {

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status Open(const std::string& flag, const std::string& path);
  Status WriteAndClose(const std::string& text);
  bool is_open() const { return fd_ >= 0; }

 private:
  Status Error(const std::string& what, int error) const;
  std::string flag_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace ckptspec
