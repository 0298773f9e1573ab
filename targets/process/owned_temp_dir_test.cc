// Temporary directories named after their owner, and the reclaiming of those whose owner is gone:
// only directories of that exact form, of this user and PID namespace, whose owner has certainly
// ended; never a link, never through one.
#include "targets/process/owned_temp_dir.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/env.h"
#include "targets/process/process_tree.h"

namespace ckptspec {
namespace {

class OwnedTempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-owned-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    ASSERT_EQ(mkdir(root_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0700), 0);
    ASSERT_TRUE(WriteFileSynced(Env::Posix(), outside_ + "/keep", "kept").ok());
    struct stat ns {};
    ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
    pid_namespace_ = std::to_string(ns.st_ino);
    ProcStat self;
    ASSERT_TRUE(ReadProcStat(getpid(), &self));
    start_time_ = std::to_string(self.start_time);
  }
  void TearDown() override { (void)Env::Posix()->RemoveTree(base_); }

  // A process that has ended and been reaped, and the start time it had.
  static void EndedProcess(pid_t* pid, uint64_t* start_time) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (;;) pause();
    }
    ProcStat stat;
    ASSERT_TRUE(ReadProcStat(child, &stat));
    kill(child, SIGKILL);
    ASSERT_EQ(waitpid(child, nullptr, 0), child);
    *pid = child;
    *start_time = stat.start_time;
  }

  std::string Make(const std::string& name) {
    EXPECT_EQ(mkdir((root_ + "/" + name).c_str(), 0700), 0) << name;
    return name;
  }

  std::vector<std::string> Entries() {
    std::vector<std::string> names;
    EXPECT_TRUE(Env::Posix()->GetChildren(root_, &names).ok());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string base_, root_, outside_, pid_namespace_, start_time_;
};

TEST_F(OwnedTempDirTest, TheNameRecordsThePidItsStartTimeAndItsNamespace) {
  std::string path;
  ASSERT_TRUE(MakeOwnedTempDir(root_, &path).ok());
  const std::string stem = root_ + "/ckptspec-adapter-" + std::to_string(getpid()) + "-" +
                           start_time_ + "-" + pid_namespace_ + "-";
  ASSERT_EQ(path.size(), stem.size() + 6) << path;
  EXPECT_EQ(path.substr(0, stem.size()), stem);
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(ReclaimAbandonedTempDirs(root_).empty()) << "its owner, this process, runs";
}

TEST_F(OwnedTempDirTest, OnlyDirectoriesOfEndedOwnersAreRemovedNeverThroughALink) {
  pid_t dead = 0;
  uint64_t dead_start = 0;
  EndedProcess(&dead, &dead_start);
  const std::string of_the_dead = "ckptspec-adapter-" + std::to_string(dead) + "-" +
                                  std::to_string(dead_start) + "-" + pid_namespace_ + "-";
  // Removed: an ended owner's directory, with a link to the outside and a file in it; a directory
  // whose pid now names a process that started at another time (this one).
  const std::string abandoned = Make(of_the_dead + "aB3dE9");
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/" + abandoned + "/link").c_str()), 0);
  ASSERT_TRUE(WriteFileSynced(Env::Posix(), root_ + "/" + abandoned + "/file", "x").ok());
  const std::string recycled =
      Make("ckptspec-adapter-" + std::to_string(getpid()) + "-" +
           std::to_string(std::stoull(start_time_) + 1) + "-" + pid_namespace_ + "-Zz0000");
  // Kept: this process's own; another namespace's; names of another form; another user's; a link
  // and a file of the right form.
  std::string own;
  ASSERT_TRUE(MakeOwnedTempDir(root_, &own).ok());
  own = own.substr(root_.size() + 1);
  const std::string other_namespace =
      Make("ckptspec-adapter-" + std::to_string(dead) + "-" + std::to_string(dead_start) + "-" +
           std::to_string(std::stoull(pid_namespace_) + 1) + "-aB3dE9");
  std::vector<std::string> kept_too = {
      Make("ckptspec-adapter-" + std::to_string(dead) + "-aB3dE9"),  // no start time
      Make(of_the_dead + "aB3dE"),                                   // a short suffix
      Make(of_the_dead + "aB3dE9x"),                                 // a long one
      Make(of_the_dead + "aB3d.9"),                                  // not a mkdtemp suffix
      Make("ckptspec-adapter-0" + std::to_string(dead) + "-" + std::to_string(dead_start) + "-" +
           pid_namespace_ + "-aB3dE9"),                            // a leading zero
      Make("ckptspec-adapter-0-1-" + pid_namespace_ + "-aB3dE9"),  // pid 0
      Make("other-" + of_the_dead + "aB3dE9"),
  };
  if (geteuid() == 0) {  // another user's directory (only root can make one)
    const std::string theirs = Make(of_the_dead + "nobody");
    ASSERT_EQ(chown((root_ + "/" + theirs).c_str(), 65534, 65534), 0);
    kept_too.push_back(theirs);
  }
  const std::string link = of_the_dead + "link00";
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/" + link).c_str()), 0);
  const std::string file = of_the_dead + "file00";
  ASSERT_TRUE(WriteFileSynced(Env::Posix(), root_ + "/" + file, "x").ok());

  std::vector<std::string> removed = ReclaimAbandonedTempDirs(root_);
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = {abandoned, recycled};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  std::vector<std::string> kept = kept_too;
  kept.insert(kept.end(), {own, other_namespace, link, file});
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(Entries(), kept);
  std::string content;
  EXPECT_TRUE(ReadFileToString(Env::Posix(), outside_ + "/keep", 100, &content).ok());
  EXPECT_EQ(content, "kept") << "nothing outside the root is touched";
  EXPECT_TRUE(ReclaimAbandonedTempDirs(root_).empty()) << "nothing more to reclaim";
}

TEST_F(OwnedTempDirTest, ARootThatIsNoDirectoryReclaimsNothing) {
  EXPECT_TRUE(ReclaimAbandonedTempDirs(base_ + "/nonesuch").empty());
  EXPECT_TRUE(ReclaimAbandonedTempDirs(outside_ + "/keep").empty());
}

}  // namespace
}  // namespace ckptspec
