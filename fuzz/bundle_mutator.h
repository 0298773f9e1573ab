// Structure-aware mutation of checkpoint bundles (fuzz/bundle.h) for checkpoint_dir_fuzzer: the
// mutated input stays a bundle, and mostly a near-valid checkpoint, so that the load gets past
// the checksums and reaches deep code. One mutation per call, chosen at random:
//  - one metadata JSON field (in metadata.json or another JSON file): a number to a boundary or
//    nearby value, a string to empty / a byte-mutated one / another string of the document, an
//    array shortened, emptied or with an element duplicated, an object member removed, a value
//    replaced by one of another type; then, mostly, metadata.xxh3 is recomputed to match;
//  - one data file's bytes (the raw mutator), then, half the time, every chunk and object
//    checksum in the directory's metadata recomputed over the new bytes (and metadata.xxh3);
//  - the tracker: another iteration present in the bundle, or mutated bytes;
//  - the directory: a file removed, renamed or copied into another iteration's directory;
//  - the load options or the seed run;
//  - and 1 call in 8 (or whenever the input is not a bundle) the raw mutator on the whole input.
// Deterministic for a given seed. Never writes more than max_size bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ckptspec {

// libFuzzer's LLVMFuzzerMutate, or a stand-in: mutates data[0, size) in place, returns the new
// size (at most max_size).
using RawMutator = size_t (*)(uint8_t* data, size_t size, size_t max_size);

// Mutates the input in data[0, size) in place; returns its new size.
size_t MutateBundle(uint8_t* data, size_t size, size_t max_size, unsigned seed, RawMutator raw);

// A bundle with each path's file taken from either parent (files only one parent has are kept or
// dropped at random), written to out; returns its size, or 0 when a parent is not a bundle or the
// result does not fit in max_out.
size_t CrossOverBundles(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                        uint8_t* out, size_t max_out, unsigned seed);

}  // namespace ckptspec
