#include "crash/fs_op.h"

namespace ckptspec {

const char* FsOpKindName(FsOpKind kind) {
  switch (kind) {
    case FsOpKind::kCreate:
      return "create";
    case FsOpKind::kMkdir:
      return "mkdir";
    case FsOpKind::kWrite:
      return "write";
    case FsOpKind::kTruncate:
      return "truncate";
    case FsOpKind::kFsync:
      return "fsync";
    case FsOpKind::kFdatasync:
      return "fdatasync";
    case FsOpKind::kSyncAll:
      return "sync";
    case FsOpKind::kRename:
      return "rename";
    case FsOpKind::kLink:
      return "link";
    case FsOpKind::kUnlink:
      return "unlink";
    case FsOpKind::kRmdir:
      return "rmdir";
    case FsOpKind::kUnseen:
      return "unseen";
  }
  return "?";
}

}  // namespace ckptspec
