// Crc32: the CRC-32 that zip archives store for each entry (ISO-HDLC: polynomial 0x04C11DB7,
// reflected, initial value and final XOR 0xFFFFFFFF; the same as zlib's crc32()), without zlib.
//
// Contract: Crc32(0, data, n) is the CRC of n bytes; a CRC over pieces chains, so
// Crc32(Crc32(0, a, na), b, nb) == Crc32(0, a + b, na + nb). Crc32(crc, p, 0) == crc (p may then
// be null). On x86-64 with PCLMULQDQ (checked at run time), runs of 64 bytes or more are folded
// with carry-less multiplication; the rest, and other machines, use slicing-by-16 (16 KiB of
// tables built at compile time, about 2 GB/s on one core, near zlib's crc32).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ckptspec {

uint32_t Crc32(uint32_t crc, const void* data, size_t n);

}  // namespace ckptspec
