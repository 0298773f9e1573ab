// libFuzzer's hooks for checkpoint_dir_fuzzer's structure-aware mutation (bundle_mutator.h).
// Linked into the libFuzzer binary only: the replayer has no LLVMFuzzerMutate.
#include <cstddef>
#include <cstdint>

#include "fuzz/bundle_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return ckptspec::MutateBundle(data, size, max_size, seed, LLVMFuzzerMutate);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
  return ckptspec::CrossOverBundles(data1, size1, data2, size2, out, max_out_size, seed);
}
