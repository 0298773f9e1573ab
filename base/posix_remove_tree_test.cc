// RemoveTree on the POSIX Env never follows a symbolic link: links at the top, inside, to
// directories and to files are removed themselves, and what they point to is untouched.
#include "base/posix_remove_tree.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/env.h"

namespace ckptspec {
namespace {

class PosixRemoveTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-remove-tree-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    outside_ = JoinPath(base_, "outside");
    tree_ = JoinPath(base_, "tree");
    ASSERT_TRUE(CreateDirs(env_, JoinPath(outside_, "sub")).ok());
    ASSERT_TRUE(WriteFileSynced(env_, JoinPath(outside_, "a.txt"), "a").ok());
    ASSERT_TRUE(WriteFileSynced(env_, JoinPath(outside_, "sub/b.txt"), "b").ok());
  }
  void TearDown() override {
    chmod(base_.c_str(), 0700);
    (void)env_->RemoveTree(base_);
  }
  void ExpectOutsideIntact() {
    std::vector<std::string> names;
    ASSERT_TRUE(env_->GetChildren(outside_, &names).ok());
    EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "sub"}));
    EXPECT_TRUE(env_->FileExists(JoinPath(outside_, "sub/b.txt")).ok());
  }

  Env* env_ = Env::Posix();
  std::string base_, outside_, tree_;
};

TEST_F(PosixRemoveTreeTest, LinksInsideAreRemovedNotFollowed) {
  ASSERT_TRUE(CreateDirs(env_, JoinPath(tree_, "deep/er")).ok());
  ASSERT_TRUE(WriteFileSynced(env_, JoinPath(tree_, "deep/file"), "x").ok());
  ASSERT_EQ(symlink(outside_.c_str(), JoinPath(tree_, "to_dir").c_str()), 0);
  ASSERT_EQ(symlink(JoinPath(outside_, "a.txt").c_str(), JoinPath(tree_, "deep/to_file").c_str()),
            0);
  ASSERT_EQ(symlink(JoinPath(outside_, "sub").c_str(), JoinPath(tree_, "deep/er/to_sub").c_str()),
            0);
  ASSERT_EQ(mkfifo(JoinPath(tree_, "fifo").c_str(), 0600), 0);
  ASSERT_TRUE(env_->RemoveTree(tree_).ok());
  EXPECT_EQ(env_->FileExists(tree_).code(), Status::Code::kNotFound);
  ExpectOutsideIntact();
}

TEST_F(PosixRemoveTreeTest, ALinkAtThePathItselfIsRemovedAlone) {
  ASSERT_EQ(symlink(outside_.c_str(), tree_.c_str()), 0);
  ASSERT_TRUE(env_->RemoveTree(tree_).ok());
  struct stat st;
  EXPECT_NE(lstat(tree_.c_str(), &st), 0);
  ExpectOutsideIntact();
  // With a trailing slash too (which path resolution would otherwise follow).
  ASSERT_EQ(symlink(outside_.c_str(), tree_.c_str()), 0);
  EXPECT_TRUE(env_->RemoveTree(tree_ + "/").ok());
  ExpectOutsideIntact();
}

TEST_F(PosixRemoveTreeTest, MissingIsNotFoundAndRootsAreRefused) {
  EXPECT_EQ(env_->RemoveTree(JoinPath(base_, "nope")).code(), Status::Code::kNotFound);
  EXPECT_EQ(PosixRemoveTree("/").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(PosixRemoveTree(".").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(PosixRemoveTree("a/..").code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ckptspec
