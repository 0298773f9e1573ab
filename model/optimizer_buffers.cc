#include "model/optimizer_buffers.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace ckptspec {

namespace {

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

Status ValidateBufferConfig(const BufferConfig& c) {
  if (c.bucket_size < 1) {
    return Status::InvalidArgument("bucket_size = " + std::to_string(c.bucket_size) +
                                   " must be >= 1");
  }
  if (c.param_alignment < 1) {
    return Status::InvalidArgument("param_alignment = " + std::to_string(c.param_alignment) +
                                   " must be >= 1");
  }
  return Status::OK();
}

void BufferLayout::Slice(int bucket, int64_t dp_rank, int64_t* begin, int64_t* end) const {
  const BufferBucket& b = buckets[bucket];
  const int64_t s = b.numel_padded / dp_size;
  *begin = std::min(dp_rank * s, b.numel_unpadded);
  *end = std::min((dp_rank + 1) * s, b.numel_unpadded);
}

BufferLayout LayoutBuffer(const std::vector<int64_t>& numels, const BufferConfig& c,
                          int64_t dp_size) {
  BufferLayout out;
  out.dp_size = dp_size;
  int64_t cur = 0;
  int64_t bucket_start = 0;
  size_t first_in_bucket = 0;
  auto close = [&]() {
    BufferBucket b;
    b.start = bucket_start;
    b.numel_unpadded = cur - bucket_start;
    b.numel_padded = RoundUp(b.numel_unpadded, std::lcm(dp_size, 2 * c.param_alignment));
    for (size_t i = first_in_bucket; i < out.params.size(); ++i) {
      out.params[i].start_in_bucket -= bucket_start;
    }
    out.buckets.push_back(b);
    cur = bucket_start + b.numel_padded;
    bucket_start = cur;
    first_in_bucket = out.params.size();
  };
  for (int i = static_cast<int>(numels.size()) - 1; i >= 0; --i) {
    BufferParam p;
    p.input_index = i;
    p.numel = numels[i];
    p.bucket = static_cast<int>(out.buckets.size());
    const int64_t start = RoundUp(cur, c.param_alignment);
    p.start_in_bucket = start;  // made bucket-relative when the bucket closes
    cur = start + p.numel;
    out.params.push_back(p);
    if (cur - bucket_start >= c.bucket_size) close();
  }
  if (out.params.size() > first_in_bucket) close();
  return out;
}

}  // namespace ckptspec
