#include "fuzz/fs_recording_snapshot.h"

namespace ckptspec {

const InitialTree& FsRecordingFuzzSnapshot() {
  static const InitialTree* const tree = [] {
    auto* t = new InitialTree;
    t->root = FileId{1, 1};
    t->entries = {
        InitialEntry{"a", FileId{1, 2}, true, ""},
        InitialEntry{"a/f", FileId{1, 3}, false, "hello"},
        InitialEntry{"e", FileId{1, 5}, true, ""},
        InitialEntry{"g", FileId{1, 4}, false, "0123456789"},
    };
    return t;
  }();
  return *tree;
}

}  // namespace ckptspec
