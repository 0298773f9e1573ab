// What fs_recording_fuzzer replays recordings over, shared with the seed tool that writes its
// seeds: a small snapshot of a checkpoint root with fixed inodes (device 1), so that recorded
// operations naming those inodes reach the crash-state builder.
//
// The snapshot: the root (inode 1:1), directory "a" (1:2), file "a/f" (1:3, "hello"), file "g"
// (1:4, "0123456789"), empty directory "e" (1:5). Inodes 1:6 and above are free for a recording's
// creates.
#pragma once

#include <cstddef>

#include "crash/initial_tree.h"

namespace ckptspec {

const InitialTree& FsRecordingFuzzSnapshot();

// A recording of more operations than this is not replayed (each replay costs about the
// operations squared: crash/crash_states.h).
inline constexpr size_t kFsRecordingFuzzMaxOps = 64;

}  // namespace ckptspec
