// A checkpoint directory serialized as one byte string: the input format of checkpoint_dir_fuzzer
// (docs/FUZZING.md, "The bundle format"). Little-endian throughout:
//
//   bytes 0-3   "CKB1"
//   byte  4     load options (BundleOptions): bits 0-2 the StrictMode (its enum order), bit 3
//               allow_shape_mismatch, bit 4 templates from the canonical framework (else from the
//               metadata), bit 5 verify every iteration (else the tracker's), bits 6-7 unused
//   byte  5     the seed run (fuzz/seed_runs.h, index modulo their count) whose framework asks
//               for templates when bit 4 is set
//   then        files, back to back, up to the end: u16 path length, the path (relative to the
//               checkpoint root, '/'-separated; ending in '/': an empty directory, no content),
//               u32 content length, the content
//
// Parsing is strict: a truncated record, an empty or repeated path, more than kMaxBundleFiles
// files or bytes after the last record make the input not a bundle (the fuzzer ignores it).
// Paths are not checked here: the Env rejects what it cannot hold ("..", "." and empty
// components). The files are a StorageTree (harness/storage_util.h), written in path order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/status.h"
#include "harness/storage_util.h"
#include "base/env.h"

namespace ckptspec {

inline constexpr char kBundleMagic[4] = {'C', 'K', 'B', '1'};
inline constexpr size_t kBundleHeaderSize = 6;
inline constexpr size_t kMaxBundleFiles = 64;

struct Bundle {
  uint8_t options = 0;
  uint8_t run = 0;
  StorageTree files;  // path relative to the root ("iter_0000002/metadata.json") -> content
};

// Accessors of Bundle::options.
inline int BundleStrictMode(const Bundle& b) { return b.options & 7; }
inline bool BundleAllowShapeMismatch(const Bundle& b) { return (b.options >> 3) & 1; }
inline bool BundleFrameworkTemplates(const Bundle& b) { return (b.options >> 4) & 1; }
inline bool BundleVerifyAll(const Bundle& b) { return (b.options >> 5) & 1; }

// False when the bytes are not a bundle (see above).
bool ParseBundle(const uint8_t* data, size_t size, Bundle* out);
std::string SerializeBundle(const Bundle& bundle);

// Every file of the bundle, with its parent directories, under `root` of `env` (WriteTree: all
// synced). Errors are the Env's (a path it cannot hold, a file where a directory should be).
Status MaterializeBundle(const Bundle& bundle, Env* env, const std::string& root);

// The reverse: the tree under `root` (ReadTree) as a bundle with `options` and `run`.
Status CollectBundle(Env* env, const std::string& root, uint8_t options, uint8_t run, Bundle* out);

}  // namespace ckptspec
