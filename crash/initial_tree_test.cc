// SnapshotDirectory: every file and directory with its inode, parents first; only regular files
// and directories; a bound on the bytes read.
#include "crash/initial_tree.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/env.h"

namespace ckptspec {
namespace {

class SnapshotDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-snapshot-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { (void)Env::Posix()->RemoveTree(root_); }
  void Write(const std::string& path, const std::string& content) {
    ASSERT_TRUE(WriteFileSynced(Env::Posix(), root_ + "/" + path, content).ok());
  }
  FileId IdOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat((root_ + "/" + path).c_str(), &st), 0) << path;
    return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  std::string root_;
};

TEST_F(SnapshotDirectoryTest, ListsEverythingParentsFirstWithInodes) {
  ASSERT_EQ(mkdir((root_ + "/b").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root_ + "/b/empty").c_str(), 0700), 0);
  Write("b/x", "xx");
  Write("a", "aaa");
  ASSERT_EQ(link((root_ + "/a").c_str(), (root_ + "/b/hard").c_str()), 0);
  InitialTree tree;
  ASSERT_TRUE(SnapshotDirectory(root_, 5, &tree).ok());  // "aaa" + "xx": the link counts once
  EXPECT_EQ(tree.root, IdOf(""));
  ASSERT_EQ(tree.entries.size(), 5u);
  const char* paths[] = {"a", "b", "b/empty", "b/hard", "b/x"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(tree.entries[i].path, paths[i]);
    EXPECT_EQ(tree.entries[i].id, IdOf(paths[i])) << paths[i];
  }
  EXPECT_TRUE(tree.entries[1].is_dir && tree.entries[2].is_dir);
  EXPECT_EQ(tree.entries[0].content, "aaa");
  EXPECT_EQ(tree.entries[3].content, "aaa");
  EXPECT_EQ(tree.entries[3].id, tree.entries[0].id);
  EXPECT_EQ(tree.entries[4].content, "xx");
}

TEST_F(SnapshotDirectoryTest, RefusesLinksSpecialFilesAndTooMuchContent) {
  Write("big", std::string(100, 'b'));
  InitialTree tree;
  Status st = SnapshotDirectory(root_, 99, &tree);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'big'"), std::string::npos) << st.ToString();
  EXPECT_TRUE(SnapshotDirectory(root_, 100, &tree).ok());

  ASSERT_EQ(symlink("big", (root_ + "/link").c_str()), 0);
  st = SnapshotDirectory(root_, 1000, &tree);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'link'"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("symbolic link"), std::string::npos) << st.ToString();
  ASSERT_EQ(unlink((root_ + "/link").c_str()), 0);

  ASSERT_EQ(mkfifo((root_ + "/pipe").c_str(), 0600), 0);
  st = SnapshotDirectory(root_, 1000, &tree);
  EXPECT_NE(st.message().find("'pipe' under the snapshot root"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("fifo"), std::string::npos) << st.ToString();

  EXPECT_FALSE(SnapshotDirectory(root_ + "/big", 1000, &tree).ok());
  EXPECT_EQ(SnapshotDirectory(root_ + "/missing", 1000, &tree).code(), Status::Code::kIOError);
}

}  // namespace
}  // namespace ckptspec
