// OpenTorchSaveArchive: a torch.save file (PyTorch's zip serialization, the format of Megatron's
// common.pt and of each tensor item inside a DCP __R_I.distcp file) as a directory of entries under
// one top-level directory: PREFIX/data.pkl (the pickle), PREFIX/data/N (tensor storages),
// PREFIX/byteorder, PREFIX/version, PREFIX/.data/serialization_id, ... PREFIX is "archive" or the
// stem of the file torch.save wrote.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/byte_source.h"
#include "formats/zip_reader.h"
#include "model/status.h"

namespace ckptspec {

struct TorchSaveArchive {
  std::string prefix;             // the top-level directory, without "/": "archive"
  std::vector<ZipEntry> entries;  // every entry, sorted by name (Find's binary search)
  std::string version;            // the version entry's text without its newline ("3"); or ""
  // The entry PREFIX/relative_name ("data.pkl", "data/0"), or null.
  const ZipEntry* Find(std::string_view relative_name) const;
};

// The longest byteorder or version entry OpenTorchSaveArchive reads (they hold a few bytes).
constexpr uint64_t kTorchSaveSmallEntryMaxBytes = 64;

// Reads the directory (ReadZipDirectory, with its checks and messages) into `archive` (replaced;
// cleared on error), then checks, each finding after "<source>: ":
//  - at least one entry, and every entry under one top-level directory, the first entry's:
//    Corruption "NAME lies outside the archive's top-level directory PREFIX/" (a name without "/"
//    or with nothing after the prefix is outside too);
//  - PREFIX/data.pkl exists: Corruption "the archive has no PREFIX/data.pkl";
//  - PREFIX/byteorder, when present (torch.save before 1.10 wrote none: little-endian), reads
//    (CRC checked) "little"; "big" is NotSupported "PREFIX/byteorder says big: big-endian
//    archives are not supported", anything else Corruption;
//  - PREFIX/version, when present, reads (CRC checked) as decimal digits and an optional newline:
//    recorded in `version`; Corruption otherwise.
// Storages' CRCs are not checked (CheckZipEntryCrc does, per entry).
Status OpenTorchSaveArchive(const ByteSource& source, const ZipLimits& limits,
                            TorchSaveArchive* archive);

}  // namespace ckptspec
