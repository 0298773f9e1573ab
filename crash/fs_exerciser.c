/* fs_exerciser: makes the file-system calls its arguments name, one after another, for the
 * interposer's tests (crash/fs_recorder_test.cc). Descriptors live in slots named by one letter.
 *
 *   fs_exerciser OP ARGS... [OP ARGS...]...
 *
 * Each operation prints "OP RESULT ERRNO" on a line of its own (ERRNO 0 when the call succeeded).
 * Operations (FLAGS: letters c O_CREAT, t O_TRUNC, a O_APPEND, w O_WRONLY, r O_RDWR,
 * d O_DIRECTORY read-only, x O_EXCL):
 *   open S PATH FLAGS | openat S DIRSLOT NAME FLAGS | creat S PATH | close S
 *   write S DATA | pwrite S OFFSET DATA | writev S DATA1 DATA2 | pwritev S OFFSET DATA1 DATA2
 *   pwritev2 S OFFSET DATA | ftruncate S LENGTH | truncate PATH LENGTH
 *   fallocate S OFFSET LENGTH | punch S OFFSET LENGTH | fsync S | fdatasync S | sync | syncfs S
 *   rename FROM TO | renameat2 DIRSLOT FROM TO | link FROM TO | unlink PATH | unlinkat S NAME
 *   rmdirat S NAME | mkdir PATH | mkdirat S NAME | rmdir PATH | symlink TARGET PATH
 *   mmap S LENGTH | fopen PATH | syscall_write S DATA | chdir PATH
 * Exit status 0, or 2 on a malformed argument list. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int slots[26];

static int usage(const char* why) {
  fprintf(stderr, "fs_exerciser: %s\n", why);
  return 2;
}

static int slot_index(const char* name) {
  return name[0] >= 'a' && name[0] <= 'z' && name[1] == '\0' ? name[0] - 'a' : -1;
}

static int open_flags(const char* letters) {
  int flags = 0;
  for (const char* p = letters; *p; ++p) {
    switch (*p) {
      case 'c':
        flags |= O_CREAT;
        break;
      case 't':
        flags |= O_TRUNC;
        break;
      case 'a':
        flags |= O_APPEND;
        break;
      case 'w':
        flags |= O_WRONLY;
        break;
      case 'r':
        flags |= O_RDWR;
        break;
      case 'd':
        flags |= O_DIRECTORY | O_RDONLY;
        break;
      case 'x':
        flags |= O_EXCL;
        break;
    }
  }
  return flags;
}

static void report(const char* op, long result) {
  printf("%s %ld %d\n", op, result, result < 0 ? errno : 0);
  fflush(stdout);
}

int main(int argc, char** argv) {
  for (int i = 0; i < 26; ++i) slots[i] = -1;
  int i = 1;
#define NEED(n)                                                       \
  do {                                                                \
    if (i + (n) >= argc) return usage("too few arguments for an op"); \
  } while (0)
#define SLOT(k) (slot_index(argv[i + (k)]) < 0 ? -1 : slots[slot_index(argv[i + (k)])])
  while (i < argc) {
    const char* op = argv[i];
    long result = 0;
    if (strcmp(op, "open") == 0 || strcmp(op, "creat") == 0) {
      int is_creat = op[0] == 'c';
      NEED(is_creat ? 2 : 3);
      int slot = slot_index(argv[i + 1]);
      if (slot < 0) return usage("bad slot");
      result =
          is_creat ? creat(argv[i + 2], 0644) : open(argv[i + 2], open_flags(argv[i + 3]), 0644);
      slots[slot] = (int)result;
      i += is_creat ? 3 : 4;
    } else if (strcmp(op, "openat") == 0) {
      NEED(4);
      int slot = slot_index(argv[i + 1]);
      if (slot < 0) return usage("bad slot");
      result = openat(SLOT(2), argv[i + 3], open_flags(argv[i + 4]), 0644);
      slots[slot] = (int)result;
      i += 5;
    } else if (strcmp(op, "close") == 0) {
      NEED(1);
      result = close(SLOT(1));
      i += 2;
    } else if (strcmp(op, "write") == 0) {
      NEED(2);
      result = write(SLOT(1), argv[i + 2], strlen(argv[i + 2]));
      i += 3;
    } else if (strcmp(op, "syscall_write") == 0) {
      NEED(2);
      result = syscall(SYS_write, SLOT(1), argv[i + 2], strlen(argv[i + 2]));
      i += 3;
    } else if (strcmp(op, "pwrite") == 0) {
      NEED(3);
      result = pwrite(SLOT(1), argv[i + 3], strlen(argv[i + 3]), atol(argv[i + 2]));
      i += 4;
    } else if (strcmp(op, "writev") == 0 || strcmp(op, "pwritev") == 0) {
      int positioned = op[0] == 'p';
      NEED(positioned ? 4 : 3);
      const char* a = argv[i + 2 + positioned];
      const char* b = argv[i + 3 + positioned];
      struct iovec v[2] = {{(void*)a, strlen(a)}, {(void*)b, strlen(b)}};
      result = positioned ? pwritev(SLOT(1), v, 2, atol(argv[i + 2])) : writev(SLOT(1), v, 2);
      i += positioned ? 5 : 4;
    } else if (strcmp(op, "pwritev2") == 0) {
      NEED(3);
      struct iovec v = {argv[i + 3], strlen(argv[i + 3])};
      result = pwritev2(SLOT(1), &v, 1, atol(argv[i + 2]), 0);
      i += 4;
    } else if (strcmp(op, "ftruncate") == 0) {
      NEED(2);
      result = ftruncate(SLOT(1), atol(argv[i + 2]));
      i += 3;
    } else if (strcmp(op, "truncate") == 0) {
      NEED(2);
      result = truncate(argv[i + 1], atol(argv[i + 2]));
      i += 3;
    } else if (strcmp(op, "fallocate") == 0 || strcmp(op, "punch") == 0) {
      NEED(3);
      int mode = op[0] == 'p' ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE : 0;
      result = fallocate(SLOT(1), mode, atol(argv[i + 2]), atol(argv[i + 3]));
      i += 4;
    } else if (strcmp(op, "fsync") == 0) {
      NEED(1);
      result = fsync(SLOT(1));
      i += 2;
    } else if (strcmp(op, "fdatasync") == 0) {
      NEED(1);
      result = fdatasync(SLOT(1));
      i += 2;
    } else if (strcmp(op, "sync") == 0) {
      sync();
      i += 1;
    } else if (strcmp(op, "syncfs") == 0) {
      NEED(1);
      result = syncfs(SLOT(1));
      i += 2;
    } else if (strcmp(op, "rename") == 0) {
      NEED(2);
      result = rename(argv[i + 1], argv[i + 2]);
      i += 3;
    } else if (strcmp(op, "renameat2") == 0) {
      NEED(3);
      result = renameat2(SLOT(1), argv[i + 2], SLOT(1), argv[i + 3], 0);
      i += 4;
    } else if (strcmp(op, "link") == 0) {
      NEED(2);
      result = link(argv[i + 1], argv[i + 2]);
      i += 3;
    } else if (strcmp(op, "symlink") == 0) {
      NEED(2);
      result = symlink(argv[i + 1], argv[i + 2]);
      i += 3;
    } else if (strcmp(op, "unlink") == 0) {
      NEED(1);
      result = unlink(argv[i + 1]);
      i += 2;
    } else if (strcmp(op, "unlinkat") == 0 || strcmp(op, "rmdirat") == 0) {
      NEED(2);
      result = unlinkat(SLOT(1), argv[i + 2], op[0] == 'r' ? AT_REMOVEDIR : 0);
      i += 3;
    } else if (strcmp(op, "mkdir") == 0) {
      NEED(1);
      result = mkdir(argv[i + 1], 0755);
      i += 2;
    } else if (strcmp(op, "mkdirat") == 0) {
      NEED(2);
      result = mkdirat(SLOT(1), argv[i + 2], 0755);
      i += 3;
    } else if (strcmp(op, "rmdir") == 0) {
      NEED(1);
      result = rmdir(argv[i + 1]);
      i += 2;
    } else if (strcmp(op, "mmap") == 0) {
      NEED(2);
      size_t length = (size_t)atol(argv[i + 2]);
      void* p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, SLOT(1), 0);
      result = p == MAP_FAILED ? -1 : 0;
      if (p != MAP_FAILED) munmap(p, length);
      i += 3;
    } else if (strcmp(op, "fopen") == 0) {
      NEED(1);
      FILE* f = fopen(argv[i + 1], "w");
      result = f == NULL ? -1 : 0;
      if (f != NULL) {
        fputs("stdio", f);
        fclose(f);
      }
      i += 2;
    } else if (strcmp(op, "chdir") == 0) {
      NEED(1);
      result = chdir(argv[i + 1]);
      i += 2;
    } else {
      return usage("unknown operation");
    }
    report(op, result);
  }
  return 0;
}
