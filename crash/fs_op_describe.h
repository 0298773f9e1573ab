// A recorded file-system operation (crash/fs_op.h) in words, for crash-state reports.
//
// Contract: one short phrase naming the kind and the path(s) (the inode where no path was
// recorded), with a write's size and offset and a truncate's length: "write of x (4096 bytes at
// 0)", "rename a/.tmp -> a/meta", "fsync of a", "sync". A failed operation ends in "(failed:
// <errno name or number>)", an injected one in "(injected)"; kUnseen gives "unseen: <detail>".
#pragma once

#include <string>

#include "crash/fs_op.h"

namespace ckptspec {

std::string DescribeFsOp(const FsOp& op);

}  // namespace ckptspec
