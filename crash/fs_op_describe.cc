#include "crash/fs_op_describe.h"

#include <string.h>

namespace ckptspec {

namespace {

std::string NameOfInode(const FileId& id) {
  return "inode " + std::to_string(id.dev) + ":" + std::to_string(id.ino);
}

std::string FirstPath(const FsOp& op) {
  if (!op.path.empty()) return op.path;
  if (!op.name.empty()) return op.name;
  return NameOfInode(op.file);
}

std::string SecondPath(const FsOp& op) { return op.path2.empty() ? op.name2 : op.path2; }

std::string Phrase(const FsOp& op) {
  const std::string kind = FsOpKindName(op.kind);
  switch (op.kind) {
    case FsOpKind::kWrite:
      return "write of " + FirstPath(op) + " (" + std::to_string(op.data.size()) + " bytes at " +
             std::to_string(op.offset) + ")";
    case FsOpKind::kTruncate:
      return "truncate of " + FirstPath(op) + " to " + std::to_string(op.length);
    case FsOpKind::kSyncAll:
      return kind;
    case FsOpKind::kRename:
    case FsOpKind::kLink:
      return kind + " " + FirstPath(op) + " -> " + SecondPath(op);
    case FsOpKind::kUnseen:
      return kind + ": " + op.detail;
    default:
      return kind + " of " + FirstPath(op);
  }
}

}  // namespace

std::string DescribeFsOp(const FsOp& op) {
  std::string out = Phrase(op);
  if (op.err != 0) {
    const char* name = strerrorname_np(op.err);
    out += std::string(" (failed: ") + (name ? name : std::to_string(op.err).c_str()) + ")";
  }
  if (op.injected) out += " (injected)";
  return out;
}

}  // namespace ckptspec
