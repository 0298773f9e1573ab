// libFuzzer's custom mutator for zip_fuzzer: libFuzzer's own mutation, then, one time in two,
// every entry's CRC in the central directory set to the CRC of the entry's bytes, so that a
// mutated byteorder, version or storage still passes the CRC check and reaches the checks behind
// it. Linked into the libFuzzer binary only: the replayer has no LLVMFuzzerMutate.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "formats/zip_reader.h"
#include "formats/zip_records.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace ckptspec;

// Writes each entry's CRC into every central directory header that names it (found by scanning
// for the header's signature: a mutator need not parse exactly).
void FixCrcs(uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<ZipEntry> entries;
  if (!ReadZipDirectory(MemoryByteSource(bytes), ZipLimits(), &entries).ok()) return;
  constexpr size_t kHeader = zip_records::kCentralHeaderBytes;
  for (size_t at = 0; at + kHeader <= size; ++at) {
    if (zip_records::Load32(data + at) != zip_records::kCentralHeaderSignature) continue;
    const size_t name_bytes = zip_records::Load16(data + at + 28);
    if (name_bytes > size - at - kHeader) continue;
    const std::string_view name = bytes.substr(at + kHeader, name_bytes);
    for (const ZipEntry& entry : entries) {
      if (entry.name != name) continue;
      const uint32_t crc = Crc32(0, data + entry.data_offset, entry.size);
      for (int i = 0; i < 4; ++i) data[at + 16 + i] = static_cast<uint8_t>(crc >> (8 * i));
    }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 2 == 0) FixCrcs(data, size);
  return size;
}
