// Counts heap allocations made through operator new in the executable that links
// allocation_counter.cc, which replaces the global operator new and delete (the unaligned forms)
// with ones that count and forward to malloc and free: mimalloc's where the executable links it,
// the sanitizer's in a sanitized build. A benchmark reports allocations per case from the count's
// difference over its batch; it is a count of calls, not of bytes or of memory held.
#ifndef CKPTSPEC_BENCH_ALLOCATION_COUNTER_H_
#define CKPTSPEC_BENCH_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace ckptspec {

// Calls of operator new (every unaligned form) since the process started, from every thread.
uint64_t AllocationCount();

}  // namespace ckptspec

#endif  // CKPTSPEC_BENCH_ALLOCATION_COUNTER_H_
