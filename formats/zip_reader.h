// ReadZipDirectory: the entries of a zip archive as torch.save writes it (PyTorch's
// inline_container: stored entries, data aligned by padding in the local header's extra field,
// sizes and CRCs in the central directory and a data descriptor, zip64 records when sizes or
// offsets exceed 32 bits). The archive is untrusted: every offset, size and count it declares is
// checked before it is used, so no input crashes the reader, makes it read outside the source,
// loop without bound, or allocate more than a few times the central directory's bytes (which lie
// inside the source and within ZipLimits) and 64 KiB for the end record's search.
//
// Every error message begins with the source's name (ByteSource::name()); a finding about one
// entry names it next: "ckpt.distcp[0, +1577): archive/data/0: data [120, 120 + 4096) lies outside
// the archive's 2000 bytes".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/byte_source.h"
#include "formats/crc32.h"
#include "model/status.h"

namespace ckptspec {

struct ZipEntry {
  std::string name;          // as stored: "archive/data.pkl", "archive/data/0", ...
  uint64_t data_offset = 0;  // where the entry's bytes start in the source
  uint64_t size = 0;         // its bytes (stored entries: compressed size == size)
  uint32_t crc32 = 0;        // the CRC-32 the central directory records (CheckZipEntryCrc)
  uint16_t method = 0;       // 0: stored, the only method ReadZipDirectory accepts
};

// What an archive may declare before the reader refuses it (NotSupported, naming the limit).
struct ZipLimits {
  // Entries in the central directory. torch.save writes about one per tensor storage plus six;
  // 2^20 leaves room for a model of a million storages.
  uint64_t max_entries = uint64_t{1} << 20;
  // Bytes of the central directory, which is read into memory whole (about 80 bytes an entry for
  // torch.save's names: 2^20 entries take about 80 MiB).
  uint64_t max_central_directory_bytes = uint64_t{256} << 20;
};

// Reads the directory of the zip archive that fills `source` into `entries` (replaced), in
// central-directory order. On error `entries` is left empty.
//
// What it checks, and what each finding is (after "<source>: "):
//  - the end-of-central-directory record, searched for in the last 64 KiB + 22 bytes only and
//    taken where its comment ends exactly at the end of the source: Corruption "no
//    end-of-central-directory record in its last N bytes";
//  - a zip64 locator right before it: the zip64 end record it names (inside the source, before
//    the locator, with its signature) is then what counts: Corruption "the zip64 end record at X
//    ..." otherwise;
//  - one disk only: NotSupported "the archive spans several disks (...)";
//  - the entry count: NotSupported "N entries exceed max_entries = M"; the central directory's
//    size: NotSupported "... exceed max_central_directory_bytes = M"; its range, which must end
//    before the end record: Corruption "the central directory [X, X + N) does not end before the
//    end record at Y"; Corruption when its bytes cannot hold the count (46 bytes an entry at
//    least), when an entry's header or name runs past it, or when bytes follow the last entry;
//  - each entry: a non-empty name; not encrypted (NotSupported); method 0, stored: NotSupported
//    "NAME: compression method 8 (deflate) is not supported: torch.save stores entries
//    uncompressed"; compressed size equal to its size; the zip64 extra field holding every field
//    the central directory marks 0xffffffff; Corruption "NAME appears twice in the central
//    directory (entries I and J)";
//  - each entry's local header: at its offset inside the source, with its signature, naming the
//    same name (Corruption "NAME: the local header at X names OTHER"); the data range after it
//    inside the source (Corruption "NAME: data [X, X + N) lies outside the archive's S bytes")
//    and before the central directory (Corruption "NAME: data [X, X + N) runs into the central
//    directory at Y"); only the signature and the name of a local header are read (torch.save
//    leaves its sizes and CRC 0 and writes them into a data descriptor), the central directory
//    is authoritative;
//  - no two entries overlap (an entry spans its local header and its data): Corruption "the data
//    of A [X, X + N) overlaps B, whose local header starts at Y".
// CRCs are not checked here (that reads every byte): CheckZipEntryCrc does.
Status ReadZipDirectory(const ByteSource& source, const ZipLimits& limits,
                        std::vector<ZipEntry>* entries);

// Streams the entry's bytes through Crc32 in blocks of at most `block_bytes` (memory: one block,
// or the entry's size when smaller) and compares with entry.crc32: Corruption "<source>: NAME:
// CRC-32 0x... differs from the 0x... its central directory records". A range outside the source
// is Corruption (ByteSource::Read's message). block_bytes 0 is taken as 1.
constexpr size_t kZipCrcBlockBytes = size_t{1} << 20;
Status CheckZipEntryCrc(const ByteSource& source, const ZipEntry& entry,
                        size_t block_bytes = kZipCrcBlockBytes);

// Reads a whole entry into `out` (replaced) and checks its CRC as CheckZipEntryCrc does. An entry
// larger than max_size is NotSupported "<source>: NAME holds N bytes, more than the M read here",
// checked before anything is allocated; its range is checked against the source before `out` is
// sized.
Status ReadSmallEntry(const ByteSource& source, const ZipEntry& entry, uint64_t max_size,
                      std::string* out);

}  // namespace ckptspec
