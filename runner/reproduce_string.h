// Reproduce strings (PropertyOutcome::reproduce: the RC_PARAMS value `ckptspec run` prints and
// `ckptspec replay` takes), decoded without trusting them. RapidCheck's own decoder reads past the
// end of a truncated input, shifts beyond 64 bits on an overlong number, and hands on states that
// make it assert (Random::split) or make generators index out of bounds (a negative size): every
// field is checked here first, and only checked bytes reach RapidCheck's deserializer.
//
// The form, RapidCheck's configuration string: space-separated key=value pairs (a value may be
// quoted with ' or ", backslash escaping the next character). Keys: seed, max_success, max_size,
// max_discard_ratio, noshrink, verbose_progress, verbose_shrinking (decimal; the last three 0 or
// 1), and reproduce: the base64 (alphabet A-Z a-z 0-9 + _, each character six bits, least
// significant first, no padding) of
//   entries (varint), then per entry: test id (varint length, bytes "target/property");
//   Random: key (four u64, little-endian), bits (varint), counter (varint), bit index (1 byte);
//   size (u32, little-endian); shrink path: steps (varint), then one varint index per step
// (a varint: 7 bits per byte, least significant group first, the high bit set on all but the
// last byte, at most 64 bits).
//
// Contracts:
//  - DecodeReproduceString never throws or crashes, and costs time and memory linear in the
//    text's length (at most kMaxReproduceStringBytes). Anything but exactly one well-formed
//    entry is InvalidArgument naming the key or the field and its value.
//  - Accepted values are those a run of the runner (runner/runner.h) records: the Random is
//    one a generator receives (counter 0, bit index at most 64, no bit set at or above the bit
//    index); 0 <= size <= max_size <= kMaxReproduceSize; at most kMaxShrinkSteps shrink steps,
//    each index at most kMaxShrinkIndex; a target name and a property id of printable ASCII, at
//    most kMaxReproduceNameBytes each, the property without '/'; no key twice, no unknown key, no
//    bytes after the entry, base64 without stray bits.
//  - It does not look the target or the property up: callers resolve them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <rapidcheck/detail/Results.h>
#include <rapidcheck/detail/TestParams.h>

#include "model/status.h"

namespace ckptspec {

// Limits of an accepted reproduce string.
constexpr size_t kMaxReproduceStringBytes = 64 * 1024;
// RapidCheck's nominal size: integer generators reach their full range there, and the runner
// never asks for more (RunParams::max_size).
constexpr int kMaxReproduceSize = 100;
constexpr size_t kMaxShrinkSteps = 10000;
constexpr uint64_t kMaxShrinkIndex = 1000000;
constexpr size_t kMaxReproduceNameBytes = 256;

struct DecodedReproduce {
  rc::detail::TestParams params;  // seed, max_success, max_size, ...; defaults where not given
  std::string target;
  std::string property;
  rc::detail::Reproduce reproduce;  // checked as above
  // RapidCheck's test id for the entry: "target/property".
  std::string id() const { return target + "/" + property; }
};

Status DecodeReproduceString(const std::string& text, DecodedReproduce* out);

}  // namespace ckptspec
