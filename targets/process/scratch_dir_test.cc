// The harness's scratch directories against an adapter that plants files, links and FIFOs.
#include "targets/process/scratch_dir.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "base/env.h"

namespace ckptspec {
namespace {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-scratch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    work_ = JoinPath(base_, "work");
    outside_ = JoinPath(base_, "outside");
    ASSERT_TRUE(CreateDirs(Env::Posix(), work_).ok());
    ASSERT_TRUE(CreateDirs(Env::Posix(), outside_).ok());
    ASSERT_TRUE(WriteFileSynced(Env::Posix(), JoinPath(outside_, "secret"), "secret").ok());
    ASSERT_TRUE(ScratchSpace::Open(work_, &space_).ok());
  }
  void TearDown() override {
    space_.reset();
    (void)Env::Posix()->RemoveTree(base_);
  }

  std::string base_, work_, outside_;
  std::unique_ptr<ScratchSpace> space_;
};

TEST_F(ScratchDirTest, WritesAndReadsBackRegularFilesAndRemovesEverything) {
  std::string path;
  {
    std::unique_ptr<ScratchDir> dir;
    ASSERT_TRUE(space_->NewCallDir(&dir).ok());
    path = dir->PathOf("r0.t0");
    EXPECT_EQ(path.rfind(work_ + "/call-", 0), 0u) << path;
    ASSERT_TRUE(dir->Write("r0.t0", "abcd", 4).ok());
    std::string bytes, what;
    EXPECT_EQ(dir->Read("r0.t0", 4, &bytes, &what), ScratchDir::ReadResult::kOk);
    EXPECT_EQ(bytes, "abcd");
    EXPECT_EQ(dir->Read("r0.t0", 3, &bytes, &what), ScratchDir::ReadResult::kTooLarge);
    EXPECT_EQ(what, "4 bytes");
    EXPECT_EQ(dir->Read("r0.t1", 3, &bytes, &what), ScratchDir::ReadResult::kMissing);
    // What an adapter leaves in the directory goes with it, links not followed.
    ASSERT_EQ(symlink(outside_.c_str(), dir->PathOf("link").c_str()), 0);
    ASSERT_TRUE(CreateDirs(Env::Posix(), dir->PathOf("sub/deeper")).ok());
  }
  std::vector<std::string> names;
  ASSERT_TRUE(Env::Posix()->GetChildren(work_, &names).ok());
  EXPECT_TRUE(names.empty());
  EXPECT_TRUE(Env::Posix()->FileExists(JoinPath(outside_, "secret")).ok());
}

TEST_F(ScratchDirTest, CallDirectoriesHaveFreshNamesAndPrivateModes) {
  std::unique_ptr<ScratchDir> a, b;
  ASSERT_TRUE(space_->NewCallDir(&a).ok());
  ASSERT_TRUE(space_->NewCallDir(&b).ok());
  EXPECT_NE(a->PathOf(""), b->PathOf(""));
  struct stat st;
  ASSERT_EQ(stat(ParentDir(a->PathOf("x")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(ScratchDirTest, NeverWritesThroughAPlantedLink) {
  std::unique_ptr<ScratchDir> dir;
  ASSERT_TRUE(space_->NewCallDir(&dir).ok());
  ASSERT_EQ(symlink(JoinPath(outside_, "secret").c_str(), dir->PathOf("r0.t0").c_str()), 0);
  const Status s = dir->Write("r0.t0", "overwritten", 11);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir->PathOf("r0.t0")), std::string::npos) << s.ToString();
  std::string content;
  ASSERT_TRUE(ReadFileToString(Env::Posix(), JoinPath(outside_, "secret"), 100, &content).ok());
  EXPECT_EQ(content, "secret");
}

TEST_F(ScratchDirTest, NeverReadsThroughALinkNorWaitsOnAFifo) {
  std::unique_ptr<ScratchDir> dir;
  ASSERT_TRUE(space_->NewCallDir(&dir).ok());
  ASSERT_EQ(symlink(JoinPath(outside_, "secret").c_str(), dir->PathOf("link").c_str()), 0);
  ASSERT_EQ(mkfifo(dir->PathOf("fifo").c_str(), 0600), 0);
  ASSERT_TRUE(CreateDirs(Env::Posix(), dir->PathOf("dir")).ok());
  std::string bytes, what;
  EXPECT_EQ(dir->Read("link", 100, &bytes, &what), ScratchDir::ReadResult::kUnsafe);
  EXPECT_EQ(what, "a symbolic link");
  EXPECT_TRUE(bytes.empty());
  EXPECT_EQ(dir->Read("fifo", 100, &bytes, &what),
            ScratchDir::ReadResult::kUnsafe);  // no writer: would block
  EXPECT_EQ(what, "a FIFO");
  EXPECT_EQ(dir->Read("dir", 100, &bytes, &what), ScratchDir::ReadResult::kUnsafe);
  EXPECT_EQ(what, "a directory");
  EXPECT_EQ(dir->Read("/etc/passwd", 1 << 20, &bytes, &what), ScratchDir::ReadResult::kError);
  EXPECT_EQ(dir->Read("../x", 1 << 20, &bytes, &what), ScratchDir::ReadResult::kError);
  EXPECT_TRUE(bytes.empty());
  EXPECT_FALSE(dir->Write("/tmp/x", "x", 1).ok());
}

TEST_F(ScratchDirTest, AWorkDirectorySwappedForALinkDoesNotMoveTheHarness) {
  ASSERT_EQ(rename(work_.c_str(), (work_ + ".moved").c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), work_.c_str()), 0);
  std::unique_ptr<ScratchDir> dir;
  ASSERT_TRUE(space_->NewCallDir(&dir).ok());
  ASSERT_TRUE(dir->Write("r0.t0", "x", 1).ok());
  std::vector<std::string> names;
  ASSERT_TRUE(Env::Posix()->GetChildren(outside_, &names).ok());
  EXPECT_EQ(names, std::vector<std::string>{"secret"});
  ASSERT_TRUE(Env::Posix()->GetChildren(work_ + ".moved", &names).ok());
  EXPECT_EQ(names.size(), 1u);
}

TEST(ScratchSpaceTest, RefusesAWorkDirectoryThatIsALink) {
  char tmpl[] = "/tmp/ckptspec-scratch-link-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string link = std::string(tmpl) + "/link";
  ASSERT_EQ(symlink(tmpl, link.c_str()), 0);
  std::unique_ptr<ScratchSpace> space;
  EXPECT_FALSE(ScratchSpace::Open(link, &space).ok());
  (void)Env::Posix()->RemoveTree(tmpl);
}

}  // namespace
}  // namespace ckptspec
