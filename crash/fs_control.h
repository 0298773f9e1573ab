/* The page the coordinator (crash/fs_recorder.h) shares with the file-system interposer
 * (crash/fs_interposer.c) in every recorded process, and the format of the records the
 * interposer writes. A C header: the interposer is C, the coordinator C++.
 *
 * The control file
 *   The coordinator creates a file holding one CkptspecFsControl and names it in the environment
 *   variable CKPTSPEC_FSREC_CONTROL of the processes it starts (with the interposer in LD_PRELOAD).
 *   The interposer maps it MAP_SHARED at its first use; a file whose magic or version differs
 *   leaves the interposer passive. Without the variable the interposer is passive: it calls the
 *   real functions and nothing else.
 *
 *   `generation` is a sequence lock: the coordinator makes it odd before it changes `recording`,
 *   `root`, `log_dir` or the fault's fields and even again after; a process that reads them copies
 *   them between two equal even readings. The counters are changed with atomic read-modify-write
 *   (__atomic builtins) by every process.
 *
 * What is recorded
 *   While `recording` is 1 every operation that crash/fs_op.h names and whose target is under
 *   `root` gets a sequence number, by an atomic fetch-add on `next_seq` taken right after the real
 *   call returns, and a record in the process's log `<log_dir>/rec.<pid>.bin` (reopened after a
 *   fork and after each change of generation). "Under the root": the path is made absolute
 *   (relative to the working directory, or to the directory an *at call's descriptor names),
 *   normalised lexically (".", "..", "//"; symbolic links are not resolved) and compared with
 *   `root` as a prefix. A descriptor is under the root when its inode was opened under the root
 *   in this process (a forked child inherits the set), or, for a regular file or directory not
 *   yet seen, when /proc/self/fd names a path under the root.
 *
 * What is NOT seen (documented limits):
 *   - system calls made directly (inline assembly, io_uring, vfork/clone children that write
 *     before exec), and statically linked programs: nothing of theirs is recorded;
 *   - writes through a writable shared mapping: the mmap itself is recorded as FsOpKind::kUnseen;
 *   - stdio's own writes (glibc's fopen/fwrite reach the kernel without the PLT): an fopen,
 *     fdopen or freopen for writing under the root is recorded as kUnseen; so are sendfile,
 *     copy_file_range and splice into a tracked descriptor, symlink/symlinkat under the root,
 *     fallocate modes that change data (punch hole, zero/collapse/insert range), renameat2's
 *     RENAME_EXCHANGE, open with O_TMPFILE, a rename or link from outside the root into it, and
 *     the generic syscall() with the number of a recorded call;
 *   - the offset of an O_APPEND write is the file's size just before the call (racy when two
 *     processes append to one file at once). O_DIRECT writes are recorded like any other.
 *
 * Injected faults
 *   `fault_kind` (CKPTSPEC_FSREC_FAULT_*) picks the counted operations: write, pwrite, pwrite64,
 *   writev, pwritev, pwritev2 on a descriptor under the root (for a short write: only those of 2
 *   bytes or more), or fsync and fdatasync for CKPTSPEC_FSREC_FAULT_FSYNC_EIO. Every process adds
 *   1 to `fault_counter` per counted operation; the one that makes it `fault_nth` (and, when
 *   `fault_sticky`, every later one) fails: ENOSPC or EIO without calling the real function, or
 *   the real write of half the bytes (rounded down), whose count is returned. Each injection adds
 *   1 to `faults_injected` and is recorded (err = the errno, injected = 1; a short write is a
 *   write of the bytes written with injected = 1). Faults are injected whether or not recording.
 *
 * The record format (little-endian, as the machine writes it), one record per operation, written
 * with one writev to the log:
 *   uint32 magic CKPTSPEC_FSREC_RECORD_MAGIC, uint32 size of the whole record in bytes,
 *   uint64 seq, int32 pid, uint8 kind (FsOpKind's value), uint8 injected, uint16 0, int32 err,
 *   uint32 0, then 10 uint64: file.dev, file.ino, dir.dev, dir.ino, dir2.dev, dir2.ino,
 *   replaced.dev, replaced.ino, offset, length; then six strings, each a uint32 length and its
 *   bytes: name, name2, path, path2 (relative to the root; "." is the root), detail, data.
 */
#ifndef CKPTSPEC_CRASH_FS_CONTROL_H_
#define CKPTSPEC_CRASH_FS_CONTROL_H_

#include <pthread.h>
#include <stdint.h>

#define CKPTSPEC_FSREC_CONTROL_ENV "CKPTSPEC_FSREC_CONTROL"
#define CKPTSPEC_FSREC_MAGIC 0x434b5346u /* "FSKC" */
#define CKPTSPEC_FSREC_VERSION 2u
#define CKPTSPEC_FSREC_PATH_BYTES 4096
#define CKPTSPEC_FSREC_RECORD_MAGIC 0x31525346u /* "FSR1" */
#define CKPTSPEC_FSREC_RECORD_FIXED_BYTES 112   /* before the six strings */
#define CKPTSPEC_FSREC_RECORD_STRINGS 6

#define CKPTSPEC_FSREC_FAULT_NONE 0u
#define CKPTSPEC_FSREC_FAULT_ENOSPC 1u    /* write family: fails with ENOSPC */
#define CKPTSPEC_FSREC_FAULT_EIO 2u       /* write family: fails with EIO */
#define CKPTSPEC_FSREC_FAULT_SHORT 3u     /* write family: writes half the bytes */
#define CKPTSPEC_FSREC_FAULT_FSYNC_EIO 4u /* fsync, fdatasync: fail with EIO */

typedef struct CkptspecFsControl {
  uint32_t magic;
  uint32_t version;
  uint64_t generation; /* sequence lock: odd while the coordinator changes the fields below */
  uint32_t recording;  /* 1: record operations under `root` */
  uint32_t fault_kind; /* CKPTSPEC_FSREC_FAULT_* */
  uint64_t fault_nth;  /* 1-based, among the kind's counted operations */
  uint32_t fault_sticky;
  uint32_t reserved;
  uint64_t fault_counter;               /* atomic: counted operations since the fault was armed */
  uint64_t faults_injected;             /* atomic */
  uint64_t next_seq;                    /* atomic: the next operation's sequence number */
  uint64_t unseen_events;               /* atomic: kUnseen records taken */
  char root[CKPTSPEC_FSREC_PATH_BYTES]; /* canonical, absolute, no trailing slash */
  char log_dir[CKPTSPEC_FSREC_PATH_BYTES]; /* absolute */
  /* The order lock (process-shared, robust; initialised by the coordinator): a recorded namespace
   * operation (create, mkdir, rename, link, unlink, rmdir, a truncating open) holds it from before
   * its call until it has its sequence number, and every other recorded operation holds it while
   * it takes its number. So an operation of another process that observed a namespace operation
   * (a create in the directory it made, a write to the file it created) is numbered after it. */
  pthread_mutex_t order_lock;
} CkptspecFsControl;

#endif /* CKPTSPEC_CRASH_FS_CONTROL_H_ */
