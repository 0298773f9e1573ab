/* The file-system interposer: an LD_PRELOAD library that records what a process does to the file
 * system under a checkpoint root and injects storage faults there (crash/fs_control.h has the
 * protocol, the record format and what is not seen). Passive unless CKPTSPEC_FSREC_CONTROL names
 * a control file. Built without sanitizers; links libc, libdl and pthread only.
 *
 * Every wrapper: resolves the real function (dlsym RTLD_NEXT, once), returns the real call when
 * passive or when called from inside the interposer (a thread-local guard), and otherwise does its
 * bookkeeping around the real call with the real functions only, keeping the caller's errno. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crash/fs_control.h"

#define EXPORT __attribute__((visibility("default")))
#define PATH_BYTES 4096

/* FsOpKind's values (crash/fs_op.h). */
enum {
  kCreate,
  kMkdir,
  kWrite,
  kTruncate,
  kFsync,
  kFdatasync,
  kSyncAll,
  kRename,
  kLink,
  kUnlink,
  kRmdir,
  kUnseen
};

/* ---- The real functions. ---- */

static int (*real_open)(const char*, int, ...);
static int (*real_open64)(const char*, int, ...);
static int (*real_openat)(int, const char*, int, ...);
static int (*real_openat64)(int, const char*, int, ...);
static int (*real___open_2)(const char*, int);
static int (*real___open64_2)(const char*, int);
static int (*real___openat_2)(int, const char*, int);
static int (*real___openat64_2)(int, const char*, int);
static int (*real_creat)(const char*, mode_t);
static int (*real_creat64)(const char*, mode_t);
static ssize_t (*real_write)(int, const void*, size_t);
static ssize_t (*real_pwrite)(int, const void*, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void*, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec*, int);
static ssize_t (*real_pwritev)(int, const struct iovec*, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec*, int, off64_t);
static ssize_t (*real_pwritev2)(int, const struct iovec*, int, off_t, int);
static ssize_t (*real_pwritev64v2)(int, const struct iovec*, int, off64_t, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_truncate)(const char*, off_t);
static int (*real_truncate64)(const char*, off64_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_fallocate64)(int, int, off64_t, off64_t);
static int (*real_posix_fallocate)(int, off_t, off_t);
static int (*real_posix_fallocate64)(int, off64_t, off64_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static void (*real_sync)(void);
static int (*real_syncfs)(int);
static int (*real_rename)(const char*, const char*);
static int (*real_renameat)(int, const char*, int, const char*);
static int (*real_renameat2)(int, const char*, int, const char*, unsigned int);
static int (*real_link)(const char*, const char*);
static int (*real_linkat)(int, const char*, int, const char*, int);
static int (*real_unlink)(const char*);
static int (*real_unlinkat)(int, const char*, int);
static int (*real_mkdir)(const char*, mode_t);
static int (*real_mkdirat)(int, const char*, mode_t);
static int (*real_rmdir)(const char*);
static int (*real_symlink)(const char*, const char*);
static int (*real_symlinkat)(const char*, int, const char*);
static void* (*real_mmap)(void*, size_t, int, int, int, off_t);
static void* (*real_mmap64)(void*, size_t, int, int, int, off64_t);
static FILE* (*real_fopen)(const char*, const char*);
static FILE* (*real_fopen64)(const char*, const char*);
static FILE* (*real_fdopen)(int, const char*);
static FILE* (*real_freopen)(const char*, const char*, FILE*);
static FILE* (*real_freopen64)(const char*, const char*, FILE*);
static ssize_t (*real_sendfile)(int, int, off_t*, size_t);
static ssize_t (*real_sendfile64)(int, int, off64_t*, size_t);
static ssize_t (*real_copy_file_range)(int, off64_t*, int, off64_t*, size_t, unsigned int);
static ssize_t (*real_splice)(int, off64_t*, int, off64_t*, size_t, unsigned int);
static long (*real_syscall)(long, ...);

#define RESOLVE(name) *(void**)(&real_##name) = dlsym(RTLD_NEXT, #name)

static void resolve_real_functions(void) {
  RESOLVE(open);
  RESOLVE(open64);
  RESOLVE(openat);
  RESOLVE(openat64);
  RESOLVE(__open_2);
  RESOLVE(__open64_2);
  RESOLVE(__openat_2);
  RESOLVE(__openat64_2);
  RESOLVE(creat);
  RESOLVE(creat64);
  RESOLVE(write);
  RESOLVE(pwrite);
  RESOLVE(pwrite64);
  RESOLVE(writev);
  RESOLVE(pwritev);
  RESOLVE(pwritev64);
  RESOLVE(pwritev2);
  RESOLVE(pwritev64v2);
  RESOLVE(ftruncate);
  RESOLVE(ftruncate64);
  RESOLVE(truncate);
  RESOLVE(truncate64);
  RESOLVE(fallocate);
  RESOLVE(fallocate64);
  RESOLVE(posix_fallocate);
  RESOLVE(posix_fallocate64);
  RESOLVE(fsync);
  RESOLVE(fdatasync);
  RESOLVE(sync);
  RESOLVE(syncfs);
  RESOLVE(rename);
  RESOLVE(renameat);
  RESOLVE(renameat2);
  RESOLVE(link);
  RESOLVE(linkat);
  RESOLVE(unlink);
  RESOLVE(unlinkat);
  RESOLVE(mkdir);
  RESOLVE(mkdirat);
  RESOLVE(rmdir);
  RESOLVE(symlink);
  RESOLVE(symlinkat);
  RESOLVE(mmap);
  RESOLVE(mmap64);
  RESOLVE(fopen);
  RESOLVE(fopen64);
  RESOLVE(fdopen);
  RESOLVE(freopen);
  RESOLVE(freopen64);
  RESOLVE(sendfile);
  RESOLVE(sendfile64);
  RESOLVE(copy_file_range);
  RESOLVE(splice);
  RESOLVE(syscall);
}

/* A missing real function (an older libc): the call fails with ENOSYS. */
#define CALL_REAL(name, failure, ...) \
  (real_##name ? real_##name(__VA_ARGS__) : (errno = ENOSYS, (failure)))

/* ---- The control page and this process's state. ---- */

/* The control's fields as of one generation; never freed (a thread may still read an old one). */
typedef struct Snapshot {
  uint64_t generation;
  int recording;
  uint32_t fault_kind;
  uint64_t fault_nth;
  int fault_sticky;
  char root[CKPTSPEC_FSREC_PATH_BYTES];
  size_t root_len;
  dev_t root_dev;
  char log_dir[CKPTSPEC_FSREC_PATH_BYTES];
} Snapshot;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CkptspecFsControl* g_control; /* NULL: passive */
static Snapshot* g_snapshot;         /* atomic */
static pthread_mutex_t g_snapshot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_log_fd = -1;
static uint64_t g_log_generation;
static pid_t g_pid;
static __thread int t_busy __attribute__((tls_model("initial-exec")));

/* Inodes this process has seen, with whether they are under the root of `generation`. */
typedef struct Inode {
  uint64_t dev, ino, generation;
  int used, under_root;
  char* relative; /* malloc'ed; NULL when not under the root */
} Inode;
static Inode* g_inodes;
static size_t g_inodes_capacity, g_inodes_used;
static pthread_mutex_t g_inodes_mu = PTHREAD_MUTEX_INITIALIZER;

static void before_fork(void) {
  pthread_mutex_lock(&g_snapshot_mu);
  pthread_mutex_lock(&g_log_mu);
  pthread_mutex_lock(&g_inodes_mu);
}
static void after_fork_in_parent(void) {
  pthread_mutex_unlock(&g_inodes_mu);
  pthread_mutex_unlock(&g_log_mu);
  pthread_mutex_unlock(&g_snapshot_mu);
}
static void after_fork_in_child(void) {
  pthread_mutex_init(&g_inodes_mu, NULL);
  pthread_mutex_init(&g_log_mu, NULL);
  pthread_mutex_init(&g_snapshot_mu, NULL);
  if (g_log_fd >= 0) close(g_log_fd);
  g_log_fd = -1;
  g_pid = getpid();
}

static void initialise(void) {
  resolve_real_functions();
  g_pid = getpid();
  const char* control_path = getenv(CKPTSPEC_FSREC_CONTROL_ENV);
  if (control_path == NULL || control_path[0] == '\0' || real_open == NULL || real_mmap == NULL)
    return;
  int saved = errno;
  int fd = real_open(control_path, O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    struct stat st;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(CkptspecFsControl)) {
      void* page =
          real_mmap(NULL, sizeof(CkptspecFsControl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      CkptspecFsControl* control = (CkptspecFsControl*)page;
      if (page != MAP_FAILED && control->magic == CKPTSPEC_FSREC_MAGIC &&
          control->version == CKPTSPEC_FSREC_VERSION) {
        g_control = control;
        pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
      } else if (page != MAP_FAILED) {
        munmap(page, sizeof(CkptspecFsControl));
      }
    }
    close(fd);
  }
  errno = saved;
}

static int fault_kind_counts_writes(uint32_t kind) {
  return kind == CKPTSPEC_FSREC_FAULT_ENOSPC || kind == CKPTSPEC_FSREC_FAULT_EIO ||
         kind == CKPTSPEC_FSREC_FAULT_SHORT;
}

/* The snapshot of the control's current generation (read under the sequence lock), or NULL when
 * the coordinator is mid-change for longer than a few yields. */
static const Snapshot* refresh_snapshot(uint64_t generation) {
  pthread_mutex_lock(&g_snapshot_mu);
  Snapshot* current = __atomic_load_n(&g_snapshot, __ATOMIC_ACQUIRE);
  if (current != NULL && current->generation == generation) {
    pthread_mutex_unlock(&g_snapshot_mu);
    return current;
  }
  Snapshot* s = (Snapshot*)calloc(1, sizeof(Snapshot));
  int consistent = 0;
  for (int attempt = 0; s != NULL && attempt < 1000 && !consistent; ++attempt) {
    uint64_t g1 = __atomic_load_n(&g_control->generation, __ATOMIC_ACQUIRE);
    if (g1 & 1) {
      sched_yield();
      continue;
    }
    s->generation = g1;
    s->recording = __atomic_load_n(&g_control->recording, __ATOMIC_RELAXED) != 0;
    s->fault_kind = __atomic_load_n(&g_control->fault_kind, __ATOMIC_RELAXED);
    s->fault_nth = __atomic_load_n(&g_control->fault_nth, __ATOMIC_RELAXED);
    s->fault_sticky = __atomic_load_n(&g_control->fault_sticky, __ATOMIC_RELAXED) != 0;
    memcpy(s->root, (const void*)g_control->root, sizeof(s->root));
    memcpy(s->log_dir, (const void*)g_control->log_dir, sizeof(s->log_dir));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    consistent = __atomic_load_n(&g_control->generation, __ATOMIC_RELAXED) == g1;
  }
  if (!consistent) {
    free(s);
    pthread_mutex_unlock(&g_snapshot_mu);
    return NULL;
  }
  s->root[sizeof(s->root) - 1] = '\0';
  s->log_dir[sizeof(s->log_dir) - 1] = '\0';
  s->root_len = strlen(s->root);
  struct stat st;
  if (s->root_len == 0 || stat(s->root, &st) != 0) {
    s->recording = 0; /* no root: nothing is under it */
    s->fault_kind = CKPTSPEC_FSREC_FAULT_NONE;
  } else {
    s->root_dev = st.st_dev;
  }
  __atomic_store_n(&g_snapshot, s, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_snapshot_mu);
  return s;
}

/* Starts a wrapper's bookkeeping: the snapshot when recording or a fault is armed (and the guard
 * set: the caller must call end()), else NULL (call the real function and nothing else). */
static const Snapshot* begin(void) {
  pthread_once(&g_once, initialise);
  if (g_control == NULL || t_busy) return NULL;
  int saved = errno;
  t_busy = 1;
  uint64_t generation = __atomic_load_n(&g_control->generation, __ATOMIC_ACQUIRE);
  const Snapshot* s = __atomic_load_n(&g_snapshot, __ATOMIC_ACQUIRE);
  if (s == NULL || s->generation != generation) s = refresh_snapshot(generation);
  errno = saved;
  if (s == NULL || (!s->recording && s->fault_kind == CKPTSPEC_FSREC_FAULT_NONE)) {
    t_busy = 0;
    return NULL;
  }
  return s;
}
static void end(void) { t_busy = 0; }

/* ---- Paths. ---- */

/* Normalises the absolute `path` in place, lexically: "//", "." and ".." go. */
static void normalise(char* path) {
  char* out = path;
  const char* in = path;
  while (*in != '\0') {
    while (*in == '/') ++in;
    if (*in == '\0') break;
    const char* component = in;
    while (*in != '\0' && *in != '/') ++in;
    size_t n = (size_t)(in - component);
    if (n == 1 && component[0] == '.') continue;
    if (n == 2 && component[0] == '.' && component[1] == '.') {
      while (out > path && *(out - 1) != '/') --out;
      if (out > path) --out;
      continue;
    }
    *out++ = '/';
    memmove(out, component, n);
    out += n;
  }
  if (out == path) *out++ = '/';
  *out = '\0';
}

/* What the descriptor names (/proc/self/fd), without " (deleted)"; 0 when it names no path. */
static int fd_path(int fd, char* out) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, PATH_BYTES - 1);
  if (n <= 0 || out[0] != '/') return 0;
  out[n] = '\0';
  static const char kDeleted[] = " (deleted)";
  size_t suffix = sizeof(kDeleted) - 1;
  if ((size_t)n > suffix && strcmp(out + n - suffix, kDeleted) == 0) out[n - suffix] = '\0';
  return 1;
}

/* The absolute, normalised form of `path` relative to `dirfd`; 0 when it cannot be formed. */
static int resolve(int dirfd, const char* path, char* out) {
  if (path == NULL) return 0;
  size_t base_len = 0;
  if (path[0] != '/') {
    if (dirfd == AT_FDCWD) {
      if (getcwd(out, PATH_BYTES) == NULL) return 0;
    } else if (!fd_path(dirfd, out)) {
      return 0;
    }
    base_len = strlen(out);
  }
  size_t path_len = strlen(path);
  if (base_len + 1 + path_len + 1 > PATH_BYTES) return 0;
  out[base_len] = '/';
  memcpy(out + base_len + 1, path, path_len + 1);
  normalise(out);
  return 1;
}

static int under_root(const Snapshot* s, const char* absolute) {
  if (s->root_len == 1) return 1; /* the root is "/" */
  return strncmp(absolute, s->root, s->root_len) == 0 &&
         (absolute[s->root_len] == '\0' || absolute[s->root_len] == '/');
}

/* The path relative to the root ("." for the root itself). */
static const char* relative_to_root(const Snapshot* s, const char* absolute) {
  if (s->root_len == 1) return absolute[1] == '\0' ? "." : absolute + 1;
  return absolute[s->root_len] == '\0' ? "." : absolute + s->root_len + 1;
}

/* The entry's name (its last component) and the inode of the directory holding it. */
static const char* entry_name(const char* absolute, uint64_t* dir_dev, uint64_t* dir_ino) {
  const char* slash = strrchr(absolute, '/');
  char parent[PATH_BYTES];
  size_t n = (size_t)(slash - absolute);
  if (n == 0) n = 1;
  memcpy(parent, absolute, n);
  parent[n] = '\0';
  struct stat st;
  *dir_dev = *dir_ino = 0;
  if (lstat(parent, &st) == 0) {
    *dir_dev = (uint64_t)st.st_dev;
    *dir_ino = (uint64_t)st.st_ino;
  }
  return slash + 1;
}

/* ---- The inodes this process has seen. ---- */

static size_t inode_slot(uint64_t dev, uint64_t ino) {
  uint64_t h = (dev * 0x9e3779b97f4a7c15ull) ^ (ino * 0xc2b2ae3d27d4eb4full);
  return (size_t)(h ^ (h >> 29)) & (g_inodes_capacity - 1);
}

/* The entry of (dev, ino), or a free one for it; NULL when no memory. Under g_inodes_mu. */
static Inode* inode_find(uint64_t dev, uint64_t ino, int for_insert) {
  if (for_insert && (g_inodes_used + 1) * 2 > g_inodes_capacity) {
    size_t old_capacity = g_inodes_capacity;
    Inode* old = g_inodes;
    size_t capacity = old_capacity ? old_capacity * 2 : 64;
    Inode* grown = (Inode*)calloc(capacity, sizeof(Inode));
    if (grown == NULL) return NULL;
    g_inodes = grown;
    g_inodes_capacity = capacity;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (!old[i].used) continue;
      size_t j = inode_slot(old[i].dev, old[i].ino);
      while (g_inodes[j].used) j = (j + 1) & (capacity - 1);
      g_inodes[j] = old[i];
    }
    free(old);
  }
  if (g_inodes_capacity == 0) return NULL;
  size_t j = inode_slot(dev, ino);
  while (g_inodes[j].used && !(g_inodes[j].dev == dev && g_inodes[j].ino == ino))
    j = (j + 1) & (g_inodes_capacity - 1);
  if (!g_inodes[j].used && !for_insert) return NULL;
  return &g_inodes[j];
}

static void inode_note(const Snapshot* s, uint64_t dev, uint64_t ino, const char* relative) {
  pthread_mutex_lock(&g_inodes_mu);
  Inode* e = inode_find(dev, ino, 1);
  if (e != NULL) {
    if (!e->used) ++g_inodes_used;
    e->used = 1;
    e->dev = dev;
    e->ino = ino;
    e->generation = s->generation;
    e->under_root = relative != NULL;
    free(e->relative);
    e->relative = relative ? strdup(relative) : NULL;
  }
  pthread_mutex_unlock(&g_inodes_mu);
}

/* An inode opened outside the root that this process knew under it: the number was used again
 * (the file under the root is gone), so the inode is outside now. */
static void inode_forget_if_reused(const Snapshot* s, int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return;
  int known = 0;
  pthread_mutex_lock(&g_inodes_mu);
  Inode* e = inode_find((uint64_t)st.st_dev, (uint64_t)st.st_ino, 0);
  known = e != NULL && e->under_root;
  pthread_mutex_unlock(&g_inodes_mu);
  if (known) inode_note(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino, NULL);
}

/* 1 when the descriptor is a regular file or directory under the root: its inode in dev and ino
 * and its path relative to the root in `relative`. */
static int fd_under_root(const Snapshot* s, int fd, uint64_t* dev, uint64_t* ino, char* relative) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return 0;
  *dev = (uint64_t)st.st_dev;
  *ino = (uint64_t)st.st_ino;
  int known = 0, under = 0;
  pthread_mutex_lock(&g_inodes_mu);
  Inode* e = inode_find(*dev, *ino, 0);
  if (e != NULL && e->generation == s->generation) {
    known = 1;
    under = e->under_root;
    if (under) snprintf(relative, PATH_BYTES, "%s", e->relative ? e->relative : "?");
  }
  pthread_mutex_unlock(&g_inodes_mu);
  if (known) return under;
  char absolute[PATH_BYTES];
  under = fd_path(fd, absolute) && (normalise(absolute), under_root(s, absolute));
  if (under) snprintf(relative, PATH_BYTES, "%s", relative_to_root(s, absolute));
  inode_note(s, *dev, *ino, under ? relative : NULL);
  return under;
}

/* ---- Records. ---- */

typedef struct Record {
  int kind, err, injected;
  uint64_t ids[8]; /* file, dir, dir2, replaced: dev and ino each */
  uint64_t offset, length;
  const char* strings[5]; /* name, name2, path, path2, detail */
  const struct iovec* data;
  int data_count;
  size_t data_bytes; /* of `data`, the first data_bytes are recorded */
} Record;

/* The control page's order lock (fs_control.h): order_lock() before a namespace operation's call,
 * released by take_seq() once the operation has its number (or by order_unlock() when it takes
 * none). A holder that dies leaves the lock to the next locker, which makes it consistent. */
static __thread int t_order_held;
static void order_lock(void) {
  if (t_order_held) return;
  if (pthread_mutex_lock(&g_control->order_lock) == EOWNERDEAD) {
    pthread_mutex_consistent(&g_control->order_lock);
  }
  t_order_held = 1;
}
static void order_unlock(void) {
  if (!t_order_held) return;
  t_order_held = 0;
  pthread_mutex_unlock(&g_control->order_lock);
}

static uint64_t take_seq(void) {
  order_lock();
  uint64_t seq = __atomic_fetch_add(&g_control->next_seq, 1, __ATOMIC_ACQ_REL);
  order_unlock();
  return seq;
}

static void write_fully(int fd, const char* bytes, size_t n) {
  while (n > 0) {
    ssize_t k = real_write(fd, bytes, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    bytes += k;
    n -= (size_t)k;
  }
}

static void put32(char** p, uint32_t v) {
  memcpy(*p, &v, 4);
  *p += 4;
}
static void put64(char** p, uint64_t v) {
  memcpy(*p, &v, 8);
  *p += 8;
}

/* Appends the record with sequence number `seq` to this process's log. */
static void emit(const Snapshot* s, uint64_t seq, const Record* r) {
  size_t lengths[5];
  size_t fixed = CKPTSPEC_FSREC_RECORD_FIXED_BYTES + 4 * CKPTSPEC_FSREC_RECORD_STRINGS;
  for (int i = 0; i < 5; ++i) {
    lengths[i] = r->strings[i] ? strlen(r->strings[i]) : 0;
    fixed += lengths[i];
  }
  char* head = (char*)malloc(fixed);
  if (head == NULL || real_write == NULL) {
    free(head);
    return; /* the seq taken is missing from the logs: the reader reports the gap */
  }
  char* p = head;
  put32(&p, CKPTSPEC_FSREC_RECORD_MAGIC);
  put32(&p, (uint32_t)(fixed + r->data_bytes));
  put64(&p, seq);
  put32(&p, (uint32_t)g_pid);
  *p++ = (char)r->kind;
  *p++ = (char)(r->injected != 0);
  *p++ = 0;
  *p++ = 0;
  put32(&p, (uint32_t)r->err);
  put32(&p, 0);
  for (int i = 0; i < 8; ++i) put64(&p, r->ids[i]);
  put64(&p, r->offset);
  put64(&p, r->length);
  for (int i = 0; i < 5; ++i) {
    put32(&p, (uint32_t)lengths[i]);
    memcpy(p, r->strings[i] ? r->strings[i] : "", lengths[i]);
    p += lengths[i];
  }
  put32(&p, (uint32_t)r->data_bytes);
  pthread_mutex_lock(&g_log_mu);
  if (g_log_fd < 0 || g_log_generation != s->generation) {
    if (g_log_fd >= 0) close(g_log_fd);
    char path[PATH_BYTES + 64];
    snprintf(path, sizeof(path), "%s/rec.%d.bin", s->log_dir, (int)g_pid);
    g_log_fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    g_log_generation = s->generation;
  }
  if (g_log_fd >= 0) {
    write_fully(g_log_fd, head, fixed);
    size_t left = r->data_bytes;
    for (int i = 0; i < r->data_count && left > 0; ++i) {
      size_t n = r->data[i].iov_len < left ? r->data[i].iov_len : left;
      write_fully(g_log_fd, (const char*)r->data[i].iov_base, n);
      left -= n;
    }
  }
  pthread_mutex_unlock(&g_log_mu);
  free(head);
}

static void set_id(Record* r, int which, uint64_t dev, uint64_t ino) {
  r->ids[2 * which] = dev;
  r->ids[2 * which + 1] = ino;
}
static void set_id_of_path(Record* r, int which, const char* absolute) {
  struct stat st;
  if (lstat(absolute, &st) == 0) set_id(r, which, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}
enum { kFile, kDir, kDir2, kReplaced };

/* Records that something under the root was done out of sight. */
static void note_unseen(const Snapshot* s, const char* relative, const char* detail) {
  if (!s->recording) return;
  uint64_t seq = take_seq();
  __atomic_fetch_add(&g_control->unseen_events, 1, __ATOMIC_ACQ_REL);
  Record r;
  memset(&r, 0, sizeof(r));
  r.kind = kUnseen;
  r.strings[2] = relative;
  r.strings[4] = detail;
  emit(s, seq, &r);
}

static void note_unseen_fd(const Snapshot* s, int fd, const char* detail) {
  uint64_t dev, ino;
  char relative[PATH_BYTES];
  if (fd_under_root(s, fd, &dev, &ino, relative)) note_unseen(s, relative, detail);
}

static void note_unseen_path(const Snapshot* s, int dirfd, const char* path, const char* detail) {
  char absolute[PATH_BYTES];
  if (resolve(dirfd, path, absolute) && under_root(s, absolute))
    note_unseen(s, relative_to_root(s, absolute), detail);
}

/* 1 when this counted operation of the armed fault's kind is to fail. */
static int fault_hits(const Snapshot* s) {
  uint64_t count = __atomic_add_fetch(&g_control->fault_counter, 1, __ATOMIC_ACQ_REL);
  int hit = count == s->fault_nth || (s->fault_sticky && count > s->fault_nth);
  if (hit) __atomic_fetch_add(&g_control->faults_injected, 1, __ATOMIC_ACQ_REL);
  return hit;
}

/* ---- open ---- */

enum OpenCall { kOpen, kOpen64, kOpenat, kOpenat64, kOpen2, kOpen64_2, kOpenat2, kOpenat64_2 };

static int call_open(enum OpenCall call, int dirfd, const char* path, int flags, mode_t mode) {
  switch (call) {
    case kOpen:
      return CALL_REAL(open, -1, path, flags, mode);
    case kOpen64:
      return CALL_REAL(open64, -1, path, flags, mode);
    case kOpenat:
      return CALL_REAL(openat, -1, dirfd, path, flags, mode);
    case kOpenat64:
      return CALL_REAL(openat64, -1, dirfd, path, flags, mode);
    case kOpen2:
      return CALL_REAL(__open_2, -1, path, flags);
    case kOpen64_2:
      return CALL_REAL(__open64_2, -1, path, flags);
    case kOpenat2:
      return CALL_REAL(__openat_2, -1, dirfd, path, flags);
    case kOpenat64_2:
      return CALL_REAL(__openat64_2, -1, dirfd, path, flags);
  }
  errno = ENOSYS;
  return -1;
}

static int do_open(enum OpenCall call, int dirfd, const char* path, int flags, mode_t mode) {
  const Snapshot* s = begin();
  char absolute[PATH_BYTES];
  if (s == NULL) return call_open(call, dirfd, path, flags, mode);
  if (!resolve(dirfd, path, absolute) || !under_root(s, absolute)) {
    int fd = call_open(call, dirfd, path, flags, mode);
    int saved = errno;
    inode_forget_if_reused(s, fd);
    end();
    errno = saved;
    return fd;
  }
  if (s->recording && (flags & (O_CREAT | O_TRUNC))) order_lock();
  struct stat before;
  int existed = lstat(absolute, &before) == 0;
  int fd = call_open(call, dirfd, path, flags, mode);
  int saved = errno;
  const char* relative = relative_to_root(s, absolute);
  int creates = (flags & O_CREAT) && !existed;
  int truncates = fd >= 0 && existed && (flags & O_TRUNC) && S_ISREG(before.st_mode) &&
                  before.st_size > 0 && (flags & O_ACCMODE) != O_RDONLY;
  uint64_t seq = s->recording && (creates || truncates) ? take_seq() : 0;
  order_unlock();
  Record r;
  memset(&r, 0, sizeof(r));
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0) {
    inode_note(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino, relative);
    set_id(&r, kFile, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
  }
  if ((flags & O_TMPFILE) == O_TMPFILE) {
    if (fd >= 0) note_unseen(s, relative, "open with O_TMPFILE");
  } else if (s->recording && (creates || truncates)) {
    r.kind = creates ? kCreate : kTruncate;
    r.err = fd < 0 ? saved : 0;
    r.strings[0] = entry_name(absolute, &r.ids[2], &r.ids[3]);
    r.strings[2] = relative;
    emit(s, seq, &r);
  }
  end();
  errno = saved;
  return fd;
}

static mode_t open_mode(int flags, va_list args) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(args, int) : 0;
}

/* open and openat with their variadic mode (read only when the flags say there is one). */
#define OPEN_WRAPPER(name, call)                       \
  EXPORT int name(const char* path, int flags, ...) {  \
    va_list args;                                      \
    va_start(args, flags);                             \
    mode_t mode = open_mode(flags, args);              \
    va_end(args);                                      \
    return do_open(call, AT_FDCWD, path, flags, mode); \
  }
#define OPENAT_WRAPPER(name, call)                               \
  EXPORT int name(int dirfd, const char* path, int flags, ...) { \
    va_list args;                                                \
    va_start(args, flags);                                       \
    mode_t mode = open_mode(flags, args);                        \
    va_end(args);                                                \
    return do_open(call, dirfd, path, flags, mode);              \
  }
OPEN_WRAPPER(open, kOpen)
OPEN_WRAPPER(open64, kOpen64)
OPENAT_WRAPPER(openat, kOpenat)
OPENAT_WRAPPER(openat64, kOpenat64)
EXPORT int __open_2(const char* path, int flags) {
  return do_open(kOpen2, AT_FDCWD, path, flags, 0);
}
EXPORT int __open64_2(const char* path, int flags) {
  return do_open(kOpen64_2, AT_FDCWD, path, flags, 0);
}
EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return do_open(kOpenat2, dirfd, path, flags, 0);
}
EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return do_open(kOpenat64_2, dirfd, path, flags, 0);
}
EXPORT int creat(const char* path, mode_t mode) {
  return do_open(kOpen, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
EXPORT int creat64(const char* path, mode_t mode) {
  return do_open(kOpen64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* ---- write family ---- */

enum WriteCall {
  kWriteCall,
  kPwrite,
  kPwrite64,
  kWritev,
  kPwritev,
  kPwritev64,
  kPwritev2,
  kPwritev64v2
};

static ssize_t call_write(enum WriteCall call, int fd, const struct iovec* iov, int count,
                          off64_t offset, int flags) {
  switch (call) {
    case kWriteCall:
      return CALL_REAL(write, -1, fd, iov[0].iov_base, iov[0].iov_len);
    case kPwrite:
      return CALL_REAL(pwrite, -1, fd, iov[0].iov_base, iov[0].iov_len, (off_t)offset);
    case kPwrite64:
      return CALL_REAL(pwrite64, -1, fd, iov[0].iov_base, iov[0].iov_len, offset);
    case kWritev:
      return CALL_REAL(writev, -1, fd, iov, count);
    case kPwritev:
      return CALL_REAL(pwritev, -1, fd, iov, count, (off_t)offset);
    case kPwritev64:
      return CALL_REAL(pwritev64, -1, fd, iov, count, offset);
    case kPwritev2:
      return CALL_REAL(pwritev2, -1, fd, iov, count, (off_t)offset, flags);
    case kPwritev64v2:
      return CALL_REAL(pwritev64v2, -1, fd, iov, count, offset, flags);
  }
  errno = ENOSYS;
  return -1;
}

/* `offset` is the call's own (pwrite*), or -1 for the descriptor's position. */
static ssize_t do_write(enum WriteCall call, int fd, const struct iovec* iov, int count,
                        off64_t offset, int flags) {
  const Snapshot* s = begin();
  if (s == NULL) return call_write(call, fd, iov, count, offset, flags);
  uint64_t dev, ino;
  char relative[PATH_BYTES];
  if (count < 0 || !fd_under_root(s, fd, &dev, &ino, relative)) {
    ssize_t n = call_write(call, fd, iov, count, offset, flags);
    end();
    return n;
  }
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  uint64_t at = (uint64_t)offset;
  int appends = (fcntl(fd, F_GETFL) & O_APPEND) != 0;
#ifdef RWF_APPEND
  if ((call == kPwritev2 || call == kPwritev64v2) && (flags & RWF_APPEND)) appends = 1;
#endif
  if (appends) {
    struct stat st;
    at = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
  } else if (offset < 0) {
    off64_t position = lseek64(fd, 0, SEEK_CUR);
    at = position < 0 ? 0 : (uint64_t)position;
  }
  int injected = 0, injected_errno = 0;
  uint32_t fault = s->fault_kind;
  if (fault_kind_counts_writes(fault) && (fault != CKPTSPEC_FSREC_FAULT_SHORT || total >= 2))
    injected = fault_hits(s);
  ssize_t n;
  if (injected && fault != CKPTSPEC_FSREC_FAULT_SHORT) {
    injected_errno = fault == CKPTSPEC_FSREC_FAULT_ENOSPC ? ENOSPC : EIO;
    n = -1;
    errno = injected_errno;
  } else if (injected) {
    /* The first half of the bytes, as a shorter vector. */
    struct iovec* half = (struct iovec*)calloc((size_t)count, sizeof(struct iovec));
    size_t want = total / 2;
    int used = 0;
    for (int i = 0; half != NULL && i < count && want > 0; ++i, ++used) {
      half[i] = iov[i];
      if (half[i].iov_len > want) half[i].iov_len = want;
      want -= half[i].iov_len;
    }
    n = half ? call_write(call, fd, half, used, offset, flags) : (errno = ENOMEM, -1);
    free(half);
  } else {
    n = call_write(call, fd, iov, count, offset, flags);
  }
  int saved = errno;
  if (s->recording) {
    uint64_t seq = take_seq();
    Record r;
    memset(&r, 0, sizeof(r));
    r.kind = kWrite;
    r.err = n < 0 ? saved : 0;
    r.injected = injected;
    set_id(&r, kFile, dev, ino);
    r.offset = at;
    r.strings[2] = relative;
    r.data = iov;
    r.data_count = count;
    r.data_bytes = n > 0 ? (size_t)n : 0;
    emit(s, seq, &r);
  }
  end();
  errno = saved;
  return n;
}

EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  struct iovec v = {(void*)buf, n};
  return do_write(kWriteCall, fd, &v, 1, -1, 0);
}
EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) {
  struct iovec v = {(void*)buf, n};
  return do_write(kPwrite, fd, &v, 1, offset, 0);
}
EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t offset) {
  struct iovec v = {(void*)buf, n};
  return do_write(kPwrite64, fd, &v, 1, offset, 0);
}
EXPORT ssize_t writev(int fd, const struct iovec* iov, int count) {
  return do_write(kWritev, fd, iov, count, -1, 0);
}
EXPORT ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t offset) {
  return do_write(kPwritev, fd, iov, count, offset, 0);
}
EXPORT ssize_t pwritev64(int fd, const struct iovec* iov, int count, off64_t offset) {
  return do_write(kPwritev64, fd, iov, count, offset, 0);
}
EXPORT ssize_t pwritev2(int fd, const struct iovec* iov, int count, off_t offset, int flags) {
  return do_write(kPwritev2, fd, iov, count, offset, flags);
}
EXPORT ssize_t pwritev64v2(int fd, const struct iovec* iov, int count, off64_t offset, int flags) {
  return do_write(kPwritev64v2, fd, iov, count, offset, flags);
}

/* ---- sizes ---- */

/* Records that the file now has `length` bytes (after a successful or failed call). */
static void note_truncate(const Snapshot* s, uint64_t dev, uint64_t ino, const char* relative,
                          uint64_t length, int result, int err) {
  if (!s->recording) return;
  uint64_t seq = take_seq();
  Record r;
  memset(&r, 0, sizeof(r));
  r.kind = kTruncate;
  r.err = result < 0 ? err : 0;
  set_id(&r, kFile, dev, ino);
  r.length = length;
  r.strings[2] = relative;
  emit(s, seq, &r);
}

static int do_ftruncate(int use64, int fd, off64_t length) {
  const Snapshot* s = begin();
  int result;
#define CALL_FTRUNCATE \
  (use64 ? CALL_REAL(ftruncate64, -1, fd, length) : CALL_REAL(ftruncate, -1, fd, (off_t)length))
  if (s == NULL) return CALL_FTRUNCATE;
  uint64_t dev, ino;
  char relative[PATH_BYTES];
  int under = fd_under_root(s, fd, &dev, &ino, relative);
  result = CALL_FTRUNCATE;
#undef CALL_FTRUNCATE
  int saved = errno;
  if (under) note_truncate(s, dev, ino, relative, (uint64_t)length, result, saved);
  end();
  errno = saved;
  return result;
}
EXPORT int ftruncate(int fd, off_t length) { return do_ftruncate(0, fd, length); }
EXPORT int ftruncate64(int fd, off64_t length) { return do_ftruncate(1, fd, length); }

static int do_truncate(int use64, const char* path, off64_t length) {
  const Snapshot* s = begin();
#define CALL_TRUNCATE \
  (use64 ? CALL_REAL(truncate64, -1, path, length) : CALL_REAL(truncate, -1, path, (off_t)length))
  if (s == NULL) return CALL_TRUNCATE;
  char absolute[PATH_BYTES];
  int under = resolve(AT_FDCWD, path, absolute) && under_root(s, absolute);
  int result = CALL_TRUNCATE;
#undef CALL_TRUNCATE
  int saved = errno;
  struct stat st;
  if (under) {
    int found = stat(absolute, &st) == 0;
    note_truncate(s, found ? (uint64_t)st.st_dev : 0, found ? (uint64_t)st.st_ino : 0,
                  relative_to_root(s, absolute), (uint64_t)length, result, saved);
  }
  end();
  errno = saved;
  return result;
}
EXPORT int truncate(const char* path, off_t length) { return do_truncate(0, path, length); }
EXPORT int truncate64(const char* path, off64_t length) { return do_truncate(1, path, length); }

/* fallocate: a size it extends is a truncate to the new size; a mode that changes the data
 * (punch hole, zero, collapse or insert range) is unseen. `posix` calls return the error. */
enum FallocateCall { kFallocate, kFallocate64, kPosixFallocate, kPosixFallocate64 };

static int call_fallocate(enum FallocateCall call, int fd, int mode, off64_t offset,
                          off64_t length) {
  switch (call) {
    case kFallocate:
      return CALL_REAL(fallocate, -1, fd, mode, (off_t)offset, (off_t)length);
    case kFallocate64:
      return CALL_REAL(fallocate64, -1, fd, mode, offset, length);
    case kPosixFallocate:
      return real_posix_fallocate ? real_posix_fallocate(fd, (off_t)offset, (off_t)length) : ENOSYS;
    case kPosixFallocate64:
      return real_posix_fallocate64 ? real_posix_fallocate64(fd, offset, length) : ENOSYS;
  }
  return ENOSYS;
}

static int do_fallocate(enum FallocateCall call, int fd, int mode, off64_t offset, off64_t length) {
  const Snapshot* s = begin();
  if (s == NULL) return call_fallocate(call, fd, mode, offset, length);
  uint64_t dev, ino;
  char relative[PATH_BYTES];
  struct stat before, after;
  int under = fd_under_root(s, fd, &dev, &ino, relative) && fstat(fd, &before) == 0;
  int result = call_fallocate(call, fd, mode, offset, length);
  int saved = errno;
  int failed = call == kPosixFallocate || call == kPosixFallocate64 ? result != 0 : result < 0;
  const int changes_data = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_COLLAPSE_RANGE |
                           FALLOC_FL_INSERT_RANGE;
  if (under && !failed) {
    if (mode & changes_data) {
      note_unseen(s, relative,
                  "fallocate that changes the data (hole, zero/collapse/insert range)");
    } else if (fstat(fd, &after) == 0 && after.st_size > before.st_size) {
      note_truncate(s, dev, ino, relative, (uint64_t)after.st_size, 0, 0);
    }
  }
  end();
  errno = saved;
  return result;
}
EXPORT int fallocate(int fd, int mode, off_t offset, off_t length) {
  return do_fallocate(kFallocate, fd, mode, offset, length);
}
EXPORT int fallocate64(int fd, int mode, off64_t offset, off64_t length) {
  return do_fallocate(kFallocate64, fd, mode, offset, length);
}
EXPORT int posix_fallocate(int fd, off_t offset, off_t length) {
  return do_fallocate(kPosixFallocate, fd, 0, offset, length);
}
EXPORT int posix_fallocate64(int fd, off64_t offset, off64_t length) {
  return do_fallocate(kPosixFallocate64, fd, 0, offset, length);
}

/* ---- syncs ---- */

static int do_fsync(int data_only, int fd) {
  const Snapshot* s = begin();
#define CALL_FSYNC (data_only ? CALL_REAL(fdatasync, -1, fd) : CALL_REAL(fsync, -1, fd))
  if (s == NULL) return CALL_FSYNC;
  uint64_t dev, ino;
  char relative[PATH_BYTES];
  if (!fd_under_root(s, fd, &dev, &ino, relative)) {
    int result = CALL_FSYNC;
    end();
    return result;
  }
  int injected = s->fault_kind == CKPTSPEC_FSREC_FAULT_FSYNC_EIO && fault_hits(s);
  int result;
  if (injected) {
    result = -1;
    errno = EIO;
  } else {
    result = CALL_FSYNC;
  }
#undef CALL_FSYNC
  int saved = errno;
  if (s->recording) {
    uint64_t seq = take_seq();
    Record r;
    memset(&r, 0, sizeof(r));
    r.kind = data_only ? kFdatasync : kFsync;
    r.err = result < 0 ? saved : 0;
    r.injected = injected;
    set_id(&r, kFile, dev, ino);
    r.strings[2] = relative;
    emit(s, seq, &r);
  }
  end();
  errno = saved;
  return result;
}
EXPORT int fsync(int fd) { return do_fsync(0, fd); }
EXPORT int fdatasync(int fd) { return do_fsync(1, fd); }

static void note_sync_all(const Snapshot* s, int result, int err) {
  if (!s->recording) return;
  uint64_t seq = take_seq();
  Record r;
  memset(&r, 0, sizeof(r));
  r.kind = kSyncAll;
  r.err = result < 0 ? err : 0;
  r.strings[2] = ".";
  emit(s, seq, &r);
}

EXPORT void sync(void) {
  const Snapshot* s = begin();
  if (real_sync) real_sync();
  if (s == NULL) return;
  int saved = errno;
  note_sync_all(s, 0, 0);
  end();
  errno = saved;
}

EXPORT int syncfs(int fd) {
  const Snapshot* s = begin();
  if (s == NULL) return CALL_REAL(syncfs, -1, fd);
  struct stat st;
  int same_filesystem = fstat(fd, &st) == 0 && st.st_dev == s->root_dev;
  int result = CALL_REAL(syncfs, -1, fd);
  int saved = errno;
  if (same_filesystem) note_sync_all(s, result, saved);
  end();
  errno = saved;
  return result;
}

/* ---- entries ---- */

enum RenameCall { kRenameCall, kRenameat, kRenameat2 };

static int call_rename(enum RenameCall call, int olddirfd, const char* oldpath, int newdirfd,
                       const char* newpath, unsigned flags) {
  switch (call) {
    case kRenameCall:
      return CALL_REAL(rename, -1, oldpath, newpath);
    case kRenameat:
      return CALL_REAL(renameat, -1, olddirfd, oldpath, newdirfd, newpath);
    case kRenameat2:
      return CALL_REAL(renameat2, -1, olddirfd, oldpath, newdirfd, newpath, flags);
  }
  errno = ENOSYS;
  return -1;
}

static int do_rename(enum RenameCall call, int olddirfd, const char* oldpath, int newdirfd,
                     const char* newpath, unsigned flags) {
  const Snapshot* s = begin();
  if (s == NULL) return call_rename(call, olddirfd, oldpath, newdirfd, newpath, flags);
  char from[PATH_BYTES], to[PATH_BYTES];
  int from_in = resolve(olddirfd, oldpath, from) && under_root(s, from);
  int to_in = resolve(newdirfd, newpath, to) && under_root(s, to);
  if (!s->recording || (!from_in && !to_in)) {
    int result = call_rename(call, olddirfd, oldpath, newdirfd, newpath, flags);
    end();
    return result;
  }
  order_lock();
  Record r;
  memset(&r, 0, sizeof(r));
  set_id_of_path(&r, kFile, from);
  set_id_of_path(&r, kReplaced, to);
  int result = call_rename(call, olddirfd, oldpath, newdirfd, newpath, flags);
  int saved = errno;
  uint64_t seq = take_seq();
  r.err = result < 0 ? saved : 0;
#ifdef RENAME_EXCHANGE
  if (flags & RENAME_EXCHANGE) {
    note_unseen(s, relative_to_root(s, from_in ? from : to), "renameat2 with RENAME_EXCHANGE");
    end();
    errno = saved;
    return result;
  }
#endif
  if (from_in) {
    r.kind = to_in ? kRename : kUnlink; /* moved out of the root: gone from it */
    r.strings[0] = entry_name(from, &r.ids[2], &r.ids[3]);
    r.strings[2] = relative_to_root(s, from);
    if (to_in) {
      r.strings[1] = entry_name(to, &r.ids[4], &r.ids[5]);
      r.strings[3] = relative_to_root(s, to);
    } else {
      r.ids[6] = r.ids[7] = 0;
    }
    emit(s, seq, &r);
  } else {
    r.kind = kUnseen;
    r.strings[2] = relative_to_root(s, to);
    r.strings[4] = "rename into the root from outside it";
    __atomic_fetch_add(&g_control->unseen_events, 1, __ATOMIC_ACQ_REL);
    emit(s, seq, &r);
  }
  if (result == 0) inode_note(s, r.ids[0], r.ids[1], to_in ? relative_to_root(s, to) : NULL);
  end();
  errno = saved;
  return result;
}
EXPORT int rename(const char* oldpath, const char* newpath) {
  return do_rename(kRenameCall, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}
EXPORT int renameat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
  return do_rename(kRenameat, olddirfd, oldpath, newdirfd, newpath, 0);
}
EXPORT int renameat2(int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                     unsigned int flags) {
  return do_rename(kRenameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

static int do_link(int at, int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                   int flags) {
  const Snapshot* s = begin();
#define CALL_LINK                                                          \
  (at ? CALL_REAL(linkat, -1, olddirfd, oldpath, newdirfd, newpath, flags) \
      : CALL_REAL(link, -1, oldpath, newpath))
  if (s == NULL) return CALL_LINK;
  char from[PATH_BYTES], to[PATH_BYTES];
  int to_in = resolve(newdirfd, newpath, to) && under_root(s, to);
  if (!s->recording || !to_in) {
    int result = CALL_LINK;
    end();
    return result;
  }
  order_lock();
  Record r;
  memset(&r, 0, sizeof(r));
  int from_in = 0;
  struct stat st;
  if ((flags & AT_EMPTY_PATH) && oldpath != NULL && oldpath[0] == '\0') {
    uint64_t dev, ino;
    char relative[PATH_BYTES];
    from_in = fd_under_root(s, olddirfd, &dev, &ino, relative);
    set_id(&r, kFile, dev, ino);
  } else if (resolve(olddirfd, oldpath, from)) {
    from_in = under_root(s, from);
    int found = (flags & AT_SYMLINK_FOLLOW) ? stat(from, &st) == 0 : lstat(from, &st) == 0;
    if (found) set_id(&r, kFile, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    if (from_in) {
      r.strings[0] = entry_name(from, &r.ids[2], &r.ids[3]);
      r.strings[2] = relative_to_root(s, from);
    }
  }
  int result = CALL_LINK;
#undef CALL_LINK
  int saved = errno;
  uint64_t seq = take_seq();
  r.err = result < 0 ? saved : 0;
  r.kind = from_in ? kLink : kUnseen;
  r.strings[1] = entry_name(to, &r.ids[4], &r.ids[5]);
  r.strings[3] = relative_to_root(s, to);
  if (!from_in) {
    r.strings[2] = relative_to_root(s, to);
    r.strings[4] = "link into the root of a file outside it";
    __atomic_fetch_add(&g_control->unseen_events, 1, __ATOMIC_ACQ_REL);
  }
  emit(s, seq, &r);
  end();
  errno = saved;
  return result;
}
EXPORT int link(const char* oldpath, const char* newpath) {
  return do_link(0, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}
EXPORT int linkat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags) {
  return do_link(1, olddirfd, oldpath, newdirfd, newpath, flags);
}

/* unlink, unlinkat and rmdir: `call` 0 unlink, 1 unlinkat, 2 rmdir. */
static int do_remove(int call, int dirfd, const char* path, int flags) {
  const Snapshot* s = begin();
#define CALL_REMOVE                                          \
  (call == 0   ? CALL_REAL(unlink, -1, path)                 \
   : call == 1 ? CALL_REAL(unlinkat, -1, dirfd, path, flags) \
               : CALL_REAL(rmdir, -1, path))
  if (s == NULL) return CALL_REMOVE;
  char absolute[PATH_BYTES];
  if (!s->recording || !resolve(dirfd, path, absolute) || !under_root(s, absolute)) {
    int result = CALL_REMOVE;
    end();
    return result;
  }
  order_lock();
  Record r;
  memset(&r, 0, sizeof(r));
  set_id_of_path(&r, kFile, absolute);
  r.strings[0] = entry_name(absolute, &r.ids[2], &r.ids[3]);
  r.strings[2] = relative_to_root(s, absolute);
  r.kind = call == 2 || (call == 1 && (flags & AT_REMOVEDIR)) ? kRmdir : kUnlink;
  int result = CALL_REMOVE;
#undef CALL_REMOVE
  int saved = errno;
  uint64_t seq = take_seq();
  r.err = result < 0 ? saved : 0;
  emit(s, seq, &r);
  end();
  errno = saved;
  return result;
}
EXPORT int unlink(const char* path) { return do_remove(0, AT_FDCWD, path, 0); }
EXPORT int unlinkat(int dirfd, const char* path, int flags) {
  return do_remove(1, dirfd, path, flags);
}
EXPORT int rmdir(const char* path) { return do_remove(2, AT_FDCWD, path, 0); }

static int do_mkdir(int at, int dirfd, const char* path, mode_t mode) {
  const Snapshot* s = begin();
#define CALL_MKDIR \
  (at ? CALL_REAL(mkdirat, -1, dirfd, path, mode) : CALL_REAL(mkdir, -1, path, mode))
  if (s == NULL) return CALL_MKDIR;
  char absolute[PATH_BYTES];
  if (!s->recording || !resolve(dirfd, path, absolute) || !under_root(s, absolute)) {
    int result = CALL_MKDIR;
    end();
    return result;
  }
  order_lock();
  int result = CALL_MKDIR;
#undef CALL_MKDIR
  int saved = errno;
  uint64_t seq = take_seq();
  Record r;
  memset(&r, 0, sizeof(r));
  r.kind = kMkdir;
  r.err = result < 0 ? saved : 0;
  if (result == 0) set_id_of_path(&r, kFile, absolute);
  r.strings[0] = entry_name(absolute, &r.ids[2], &r.ids[3]);
  r.strings[2] = relative_to_root(s, absolute);
  if (result == 0) inode_note(s, r.ids[0], r.ids[1], r.strings[2]);
  emit(s, seq, &r);
  end();
  errno = saved;
  return result;
}
EXPORT int mkdir(const char* path, mode_t mode) { return do_mkdir(0, AT_FDCWD, path, mode); }
EXPORT int mkdirat(int dirfd, const char* path, mode_t mode) {
  return do_mkdir(1, dirfd, path, mode);
}

/* ---- what is not followed: marked unseen ---- */

EXPORT int symlink(const char* target, const char* linkpath) {
  const Snapshot* s = begin();
  int result = CALL_REAL(symlink, -1, target, linkpath);
  if (s == NULL) return result;
  int saved = errno;
  if (result == 0) note_unseen_path(s, AT_FDCWD, linkpath, "symlink");
  end();
  errno = saved;
  return result;
}
EXPORT int symlinkat(const char* target, int dirfd, const char* linkpath) {
  const Snapshot* s = begin();
  int result = CALL_REAL(symlinkat, -1, target, dirfd, linkpath);
  if (s == NULL) return result;
  int saved = errno;
  if (result == 0) note_unseen_path(s, dirfd, linkpath, "symlinkat");
  end();
  errno = saved;
  return result;
}

static void note_mmap(const Snapshot* s, void* result, int prot, int flags, int fd) {
  int shared = (flags & MAP_SHARED) || (flags & MAP_SHARED_VALIDATE) == MAP_SHARED_VALIDATE;
  if (result != MAP_FAILED && fd >= 0 && shared && (prot & PROT_WRITE))
    note_unseen_fd(s, fd, "writable shared mmap (its writes are not seen)");
}
static void* do_mmap(int use64, void* addr, size_t length, int prot, int flags, int fd,
                     off64_t offset) {
  const Snapshot* s = begin();
  void* result = MAP_FAILED;
  if (use64 ? real_mmap64 != NULL : real_mmap != NULL) {
    result = use64 ? real_mmap64(addr, length, prot, flags, fd, offset)
                   : real_mmap(addr, length, prot, flags, fd, (off_t)offset);
  }
  if (s == NULL) return result;
  int saved = errno;
  note_mmap(s, result, prot, flags, fd);
  end();
  errno = saved;
  return result;
}
EXPORT void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  return do_mmap(0, addr, length, prot, flags, fd, offset);
}
EXPORT void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off64_t offset) {
  return do_mmap(1, addr, length, prot, flags, fd, offset);
}

static int mode_writes(const char* mode) {
  return mode != NULL && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'));
}

#define STDIO_OPEN_WRAPPER(name, params, call, path_expr)                          \
  EXPORT FILE* name params {                                                       \
    const Snapshot* s = begin();                                                   \
    FILE* result = real_##name ? real_##name call : (errno = ENOSYS, (FILE*)NULL); \
    if (s == NULL) return result;                                                  \
    int saved = errno;                                                             \
    if (result != NULL && mode_writes(mode))                                       \
      note_unseen_path(s, AT_FDCWD, path_expr,                                     \
                       #name " for writing (stdio's writes are not seen)");        \
    end();                                                                         \
    errno = saved;                                                                 \
    return result;                                                                 \
  }
STDIO_OPEN_WRAPPER(fopen, (const char* path, const char* mode), (path, mode), path)
STDIO_OPEN_WRAPPER(fopen64, (const char* path, const char* mode), (path, mode), path)
STDIO_OPEN_WRAPPER(freopen, (const char* path, const char* mode, FILE* stream),
                   (path, mode, stream), path)
STDIO_OPEN_WRAPPER(freopen64, (const char* path, const char* mode, FILE* stream),
                   (path, mode, stream), path)

EXPORT FILE* fdopen(int fd, const char* mode) {
  const Snapshot* s = begin();
  FILE* result = CALL_REAL(fdopen, NULL, fd, mode);
  if (s == NULL) return result;
  int saved = errno;
  if (result != NULL && mode_writes(mode))
    note_unseen_fd(s, fd, "fdopen for writing (stdio's writes are not seen)");
  end();
  errno = saved;
  return result;
}

#define COPY_WRAPPER(name, params, call, out_fd)                                    \
  EXPORT ssize_t name params {                                                      \
    const Snapshot* s = begin();                                                    \
    ssize_t result = CALL_REAL(name, -1, call);                                     \
    if (s == NULL) return result;                                                   \
    int saved = errno;                                                              \
    if (result > 0) note_unseen_fd(s, out_fd, #name " into a file under the root"); \
    end();                                                                          \
    errno = saved;                                                                  \
    return result;                                                                  \
  }
#define ARGS(...) __VA_ARGS__
COPY_WRAPPER(sendfile, (int out, int in, off_t* offset, size_t n), ARGS(out, in, offset, n), out)
COPY_WRAPPER(sendfile64, (int out, int in, off64_t* offset, size_t n), ARGS(out, in, offset, n),
             out)
COPY_WRAPPER(copy_file_range,
             (int in, off64_t* in_offset, int out, off64_t* out_offset, size_t n, unsigned flags),
             ARGS(in, in_offset, out, out_offset, n, flags), out)
COPY_WRAPPER(splice,
             (int in, off64_t* in_offset, int out, off64_t* out_offset, size_t n, unsigned flags),
             ARGS(in, in_offset, out, out_offset, n, flags), out)

/* The generic syscall(): a recorded call made through it is unseen. How each recorded call names
 * its target (the argument positions of the descriptor or of the directory descriptor and path). */
enum SyscallTarget {
  kNotRecorded,
  kFdArg0,        /* write, fsync, ... */
  kFdArg2,        /* copy_file_range, splice: the descriptor written */
  kPathArg0,      /* open, unlink, ... */
  kPathArg1,      /* rename, link, symlink: the new name */
  kDirfdPathArg0, /* openat, mkdirat, unlinkat */
  kDirfdPathArg1, /* symlinkat */
  kDirfdPathArg2, /* renameat, renameat2, linkat: the new name */
  kEverything     /* sync */
};

static enum SyscallTarget syscall_target(long number) {
  switch (number) {
    case SYS_write:
    case SYS_pwrite64:
    case SYS_writev:
    case SYS_pwritev:
    case SYS_pwritev2:
    case SYS_ftruncate:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_fallocate:
    case SYS_syncfs:
    case SYS_sendfile:
      return kFdArg0;
    case SYS_copy_file_range:
    case SYS_splice:
      return kFdArg2;
    case SYS_open:
    case SYS_creat:
    case SYS_truncate:
    case SYS_mkdir:
    case SYS_rmdir:
    case SYS_unlink:
      return kPathArg0;
    case SYS_rename:
    case SYS_link:
    case SYS_symlink:
      return kPathArg1;
    case SYS_openat:
    case SYS_mkdirat:
    case SYS_unlinkat:
      return kDirfdPathArg0;
    case SYS_symlinkat:
      return kDirfdPathArg1;
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_linkat:
      return kDirfdPathArg2;
    case SYS_sync:
      return kEverything;
  }
  return kNotRecorded;
}

static void note_syscall(const Snapshot* s, enum SyscallTarget target, const long* a) {
  const char* what = "syscall() of a recorded call under the root";
  switch (target) {
    case kNotRecorded:
      return;
    case kFdArg0:
    case kFdArg2:
      note_unseen_fd(s, (int)a[target == kFdArg0 ? 0 : 2], what);
      return;
    case kPathArg0:
    case kPathArg1:
      note_unseen_path(s, AT_FDCWD, (const char*)a[target == kPathArg0 ? 0 : 1], what);
      return;
    case kDirfdPathArg0:
    case kDirfdPathArg1:
    case kDirfdPathArg2: {
      const int at = target == kDirfdPathArg0 ? 0 : target == kDirfdPathArg1 ? 1 : 2;
      note_unseen_path(s, (int)a[at], (const char*)a[at + 1], what);
      return;
    }
    case kEverything:
      note_unseen(s, ".", what);
      return;
  }
}

EXPORT long syscall(long number, ...) {
  long a[6];
  va_list args;
  va_start(args, number);
  for (int i = 0; i < 6; ++i) a[i] = va_arg(args, long);
  va_end(args);
  const enum SyscallTarget target = syscall_target(number);
  if (target == kNotRecorded) {
    pthread_once(&g_once, initialise);
    return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  }
  const Snapshot* s = begin();
  long result = real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (s == NULL) return result;
  int saved = errno;
  if (result >= 0) note_syscall(s, target, a);
  end();
  errno = saved;
  return result;
}
