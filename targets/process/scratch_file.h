// The scratch files that carry entry bytes between the harness and an adapter (docs/PROTOCOL.md,
// "Entries"). Plain POSIX files, not synced: they live for one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "model/status.h"
#include "targets/process/protocol.h"

namespace ckptspec {

// Creates or truncates `path` and writes `size` bytes. IOError naming the file on failure.
Status WriteScratchFile(const std::string& path, const void* data, size_t size);

// Reads the whole file. NotFound when it does not exist; Corruption when it is larger than
// `max_size` (checked before allocating); IOError otherwise.
Status ReadScratchFile(const std::string& path, uint64_t max_size, std::string* out);

// An adapter's reader of the entries of one request: an entry's bytes are its whole file, or
// (revision 4, packed) its range of a file that holds several entries, which is read once, whole
// (at most `max_size` bytes), and kept for the entries after it.
class EntryReader {
 public:
  explicit EntryReader(uint64_t max_size) : max_size_(max_size) {}
  // *out = the entry's bytes. InvalidArgument naming the file when the range lies beyond its end;
  // else as ReadScratchFile.
  Status Read(const std::string& file, const std::optional<FileRange>& range, std::string* out);

 private:
  uint64_t max_size_;
  std::optional<std::string> path_;  // the packed file read last, and its bytes
  std::string bytes_;
};

// An adapter's writer of one rank's loaded entries: a file each, written at once, or (revision 4,
// packed) ranges of one file, laid out in memory and written by Finish (a range no entry was
// written to reads zeros; the file ends where the last written range ends).
class EntryWriter {
 public:
  explicit EntryWriter(uint64_t max_size) : max_size_(max_size) {}
  // Writes `size` bytes at the range's offset (or the whole file); InvalidArgument when they would
  // end past `max_size`, or when a second packed file is named.
  Status Write(const std::string& file, const std::optional<FileRange>& range, const void* data,
               size_t size);
  Status Finish();

 private:
  uint64_t max_size_;
  std::optional<std::string> path_;  // the packed file, once a ranged entry was written
  std::string bytes_;
};

}  // namespace ckptspec
