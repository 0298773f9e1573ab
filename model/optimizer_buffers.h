// The distributed optimizer's flat buffers (Megatron-core's _ParamAndGradBuffer with
// use_distributed_optimizer): how one rank's parameters are laid out in padded, bucketed flat
// buffers and how each bucket is split over the data-parallel group. Pure index math.
//
// Layout (one buffer per sub-optimizer and rank: one model chunk, one parameter dtype):
//  - Parameters are placed in REVERSE of the given order (Megatron builds buffers in backprop
//    order). Each parameter starts at the next multiple of `param_alignment` elements (Megatron
//    pads starts to 64 values: 128-byte alignment for 16-bit types).
//  - A bucket closes as soon as its parameters span >= bucket_size elements (a parameter is never
//    split across buckets); the last bucket closes after the last parameter. A bucket's
//    numel_unpadded is its span up to the end of its last parameter (alignment gaps inside count);
//    it is then padded to a multiple of lcm(DP size, 2·param_alignment), and the next bucket
//    starts after the padding (Megatron pads to lcm(DP size, 128): 256-byte bucket starts, twice
//    its 64-value parameter alignment). Every bucket therefore starts at a multiple of
//    param_alignment whatever the DP size, so the parameters' places inside their buckets and
//    each bucket's numel_unpadded do not depend on the DP size: the property that lets a
//    dp_reshardable checkpoint (whose per-bucket numel_unpadded must match on load) load under a
//    DP change.
//  - DP rank r owns elements [r·S, (r+1)·S) of each padded bucket, S = padded / dp_size.
//    The checkpoint (dp_reshardable) stores, per bucket and state, a 1-D tensor of numel_unpadded
//    elements; rank r's chunk is its slice clipped to numel_unpadded (possibly empty: a rank whose
//    slice is all padding writes nothing). Alignment gaps hold zeros.
// With uneven parameter sizes the slices hold different numbers of parameters (docs/BUGS.md B07): any
// per-parameter list of a slice is rank-variant and must never go to common state.
#pragma once

#include <cstdint>
#include <vector>

#include "model/status.h"

namespace ckptspec {

struct BufferConfig {
  int64_t bucket_size = 40000;   // elements; Megatron's ddp bucket_size
  int64_t param_alignment = 64;  // elements
};

// Validates the config: both sizes >= 1. Errors name the field.
Status ValidateBufferConfig(const BufferConfig& c);

// One parameter in the buffer.
struct BufferParam {
  int input_index = 0;  // index into the numels given to LayoutBuffer
  int bucket = 0;
  int64_t numel = 0;
  int64_t start_in_bucket = 0;  // first element, relative to its bucket's start
};

struct BufferBucket {
  int64_t start = 0;           // in the buffer
  int64_t numel_unpadded = 0;  // the checkpointed length
  int64_t numel_padded = 0;    // multiple of dp_size
};

struct BufferLayout {
  std::vector<BufferParam> params;  // in buffer order (reverse of the input)
  std::vector<BufferBucket> buckets;
  int64_t dp_size = 1;

  // DP rank r's slice of bucket b, clipped to numel_unpadded: [*begin, *end) (empty when equal).
  void Slice(int bucket, int64_t dp_rank, int64_t* begin, int64_t* end) const;
};

// Lays out parameters of the given sizes (each >= 1). Preconditions: ValidateBufferConfig(c).ok(),
// dp_size >= 1.
BufferLayout LayoutBuffer(const std::vector<int64_t>& numels, const BufferConfig& c,
                          int64_t dp_size);

}  // namespace ckptspec
