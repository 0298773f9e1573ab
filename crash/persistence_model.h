// The persistence models under which crash states are built (crash/crash_states.h): what a crash
// may take away from operations that completed before it.
//
// Contracts (the exact rules; crash/crash_states.h applies them to a recording of FsOps):
//  - kOrdered ("ordered"): every operation that completed before the crash persisted, in the order
//    it completed, each atomically. The crash state after k operations is the replay of the first
//    k. The strong model: a file system that journals data and metadata in order.
//  - kPosixWeak ("posix-weak"): after k completed operations, an operation survives for sure only
//    if it was made durable before the crash:
//      * a write or truncate of file F is durable once a later fsync or fdatasync of F completed
//        (fdatasync covers F's size too);
//      * a directory entry operation (create, mkdir, link, unlink, rmdir, rename) in directory D
//        is durable once a later fsync of D completed (a rename: of both of its directories; a
//        link: of the directory of its new name). fdatasync of a directory does not count;
//      * sync or syncfs makes every operation before it durable.
//    Only successful operations (err 0) count, fsyncs included: a failed fsync makes nothing
//    durable. Every other completed operation may or may not have persisted, independently,
//    except that:
//      * each operation is atomic (a rename is all or nothing), except a write, which may persist
//        torn: the first bytes of its data persisted, the rest of its range did not (the bytes it
//        overwrote keep their old content; beyond the old size the file reads as zeros up to the
//        write's end: the file's size persisted, its data did not);
//      * the data operations (writes and truncates) of one file persist in order: those that
//        persisted are a prefix of the file's data operations, so only a suffix of its
//        non-durable ones is lost (a torn write is the last one that persisted, partly);
//      * a file whose create persisted but none of whose data did is empty (the zero-length file
//        of a crash); data lands in the inode, so a lost create with a persisted rename leaves the
//        file under its new name;
//      * an entry op that persisted in a directory whose own creation did not is unreachable from
//        the root and simply absent.
#pragma once

#include <cstdint>

namespace ckptspec {

enum class PersistenceModel : uint8_t { kOrdered, kPosixWeak };

// "ordered" or "posix-weak".
const char* PersistenceModelName(PersistenceModel model);

// One paragraph, for reports: what the model lets a crash take away.
const char* PersistenceModelDescription(PersistenceModel model);

}  // namespace ckptspec
