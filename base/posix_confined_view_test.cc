#include "base/posix_confined_view.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "base/env.h"
#include "base/mem_env.h"

namespace ckptspec {
namespace {

// root/ holds a/file.bin ("payload") and a/sub/; outside/secret lies next to it.
class PosixConfinedViewTest : public testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/ckptspec_view_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    top_ = pattern;
    root_ = JoinPath(top_, "root");
    outside_ = JoinPath(top_, "outside");
    Env* env = Env::Posix();
    ASSERT_TRUE(CreateDirs(env, JoinPath(root_, "a/sub")).ok());
    ASSERT_TRUE(CreateDirs(env, outside_).ok());
    ASSERT_TRUE(WriteFileSynced(env, JoinPath(root_, "a/file.bin"), "payload").ok());
    ASSERT_TRUE(WriteFileSynced(env, JoinPath(outside_, "secret"), "outside bytes").ok());
    ASSERT_TRUE(env->NewConfinedView(root_, &view_).ok());
  }
  void TearDown() override { EXPECT_TRUE(Env::Posix()->RemoveTree(top_).ok()); }

  void Link(const std::string& target, const std::string& at) {
    ASSERT_EQ(::symlink(target.c_str(), JoinPath(root_, at).c_str()), 0) << at;
  }

  std::string top_, root_, outside_;
  std::unique_ptr<Env> view_;
};

TEST_F(PosixConfinedViewTest, ReadsWhatLiesBelowTheRoot) {
  std::string text;
  ASSERT_TRUE(ReadFileToString(view_.get(), JoinPath(root_, "a/file.bin"), 100, &text).ok());
  EXPECT_EQ(text, "payload");
  std::vector<std::string> names;
  ASSERT_TRUE(view_->GetChildren(JoinPath(root_, "a"), &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"file.bin", "sub"}));
  ASSERT_TRUE(view_->GetChildren(root_, &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"a"}));
  bool is_dir = false;
  ASSERT_TRUE(view_->IsDirectory(JoinPath(root_, "a/sub"), &is_dir).ok());
  EXPECT_TRUE(is_dir);
  ASSERT_TRUE(view_->IsDirectory(root_, &is_dir).ok());
  EXPECT_TRUE(is_dir);
  EXPECT_TRUE(view_->FileExists(JoinPath(root_, "a/file.bin")).ok());
  EXPECT_EQ(view_->FileExists(JoinPath(root_, "a/missing")).code(), Status::Code::kNotFound);
  EXPECT_EQ(view_->FileExists(JoinPath(root_, "missing/x")).code(), Status::Code::kNotFound);
  // "." and empty components are harmless.
  EXPECT_TRUE(view_->FileExists(root_ + "/./a//file.bin").ok());
}

TEST_F(PosixConfinedViewTest, PathsOutsideTheRootAreRefused) {
  uint64_t size = 0;
  for (const std::string& path : {JoinPath(outside_, "secret"), root_ + "/../outside/secret",
                                  root_ + "/a/../../outside/secret", root_ + "x/file"}) {
    const Status s = view_->GetFileSize(path, &size);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << path;
    EXPECT_NE(s.message().find("is outside the checkpoint root"), std::string::npos)
        << s.ToString();
  }
}

TEST_F(PosixConfinedViewTest, LinksAreRefusedAtEveryLevelAndNamed) {
  ASSERT_NO_FATAL_FAILURE(Link(outside_, "dir_out"));                  // absolute, leaves
  ASSERT_NO_FATAL_FAILURE(Link("../../outside/secret", "a/rel_out"));  // relative, leaves
  ASSERT_NO_FATAL_FAILURE(Link(JoinPath(outside_, "secret"), "a/abs_out"));
  ASSERT_NO_FATAL_FAILURE(Link("file.bin", "a/in"));     // stays inside
  ASSERT_NO_FATAL_FAILURE(Link("../a", "a/sub/up_in"));  // stays inside
  struct Case {
    std::string path;  // below the root
    std::string link;  // the component refused
    bool leaves;
  };
  const std::vector<Case> cases = {{"dir_out/secret", "dir_out", true},
                                   {"a/rel_out", "a/rel_out", true},
                                   {"a/abs_out", "a/abs_out", true},
                                   {"a/in", "a/in", false},
                                   {"a/sub/up_in/file.bin", "a/sub/up_in", false}};
  for (const Case& c : cases) {
    const std::string path = JoinPath(root_, c.path);
    const std::string expected = JoinPath(root_, c.link) + " is a symbolic link " +
                                 (c.leaves ? "leaving" : "inside") +
                                 " the checkpoint root; links are not followed";
    std::unique_ptr<RandomAccessFile> file;
    uint64_t size = 0;
    bool is_dir = false;
    std::vector<std::string> names;
    for (const Status& s : {view_->NewRandomAccessFile(path, &file),
                            view_->GetFileSize(path, &size), view_->GetFileStoredSize(path, &size),
                            view_->IsDirectory(path, &is_dir), view_->GetChildren(path, &names)}) {
      EXPECT_EQ(s.code(), Status::Code::kCorruption) << c.path << ": " << s.ToString();
      EXPECT_EQ(s.message(), expected) << c.path;
    }
  }
  // A link exists: FileExists says so (it is reading through it that is refused).
  EXPECT_TRUE(view_->FileExists(JoinPath(root_, "a/abs_out")).ok());
}

TEST_F(PosixConfinedViewTest, SpecialFilesAreRefusedWithoutBeingOpened) {
  const std::string fifo = JoinPath(root_, "a/fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::unique_ptr<RandomAccessFile> file;
  Status s = view_->NewRandomAccessFile(fifo, &file);  // would block for ever if opened
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_EQ(s.message(), fifo + " is a FIFO, not a regular file");
  uint64_t size = 0;
  EXPECT_EQ(view_->GetFileSize(fifo, &size).message(), fifo + " is a FIFO, not a regular file");

  const std::string socket_path = JoinPath(root_, "a/sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof(address.sun_path));
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  s = view_->NewRandomAccessFile(socket_path, &file);
  ::close(fd);
  EXPECT_EQ(s.message(), socket_path + " is a socket, not a regular file");

  s = view_->NewRandomAccessFile(JoinPath(root_, "a/sub"), &file);
  EXPECT_EQ(s.message(), JoinPath(root_, "a/sub") + " is a directory, not a regular file");
}

TEST_F(PosixConfinedViewTest, TheRootItselfMayBeALink) {
  const std::string alias = JoinPath(top_, "alias");
  ASSERT_EQ(::symlink(root_.c_str(), alias.c_str()), 0);
  std::unique_ptr<Env> view;
  ASSERT_TRUE(Env::Posix()->NewConfinedView(alias, &view).ok());
  std::string text;
  ASSERT_TRUE(ReadFileToString(view.get(), JoinPath(alias, "a/file.bin"), 100, &text).ok());
  EXPECT_EQ(text, "payload");
}

TEST_F(PosixConfinedViewTest, StoredSizeOfASparseFileIsItsBlocks) {
  const std::string path = JoinPath(root_, "a/sparse.bin");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 30), 0);
  ::close(fd);
  uint64_t size = 0, stored = 0;
  ASSERT_TRUE(view_->GetFileSize(path, &size).ok());
  ASSERT_TRUE(view_->GetFileStoredSize(path, &stored).ok());
  EXPECT_EQ(size, uint64_t{1} << 30);
  EXPECT_LT(stored, uint64_t{1} << 20);
}

TEST(LexicalConfinedView, RefusesPathsOutsideTheRootAndPassesTheRest) {
  MemEnv env;
  ASSERT_TRUE(CreateDirs(&env, "/r/a").ok());
  ASSERT_TRUE(CreateDirs(&env, "/other").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/r/a/f", "x").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/other/f", "y").ok());
  std::unique_ptr<Env> view;
  ASSERT_TRUE(env.NewConfinedView("/r", &view).ok());
  uint64_t size = 0;
  EXPECT_TRUE(view->GetFileSize("/r/a/f", &size).ok());
  EXPECT_EQ(view->GetFileSize("/other/f", &size).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(view->GetFileSize("/r/../other/f", &size).code(), Status::Code::kInvalidArgument);
  // Writes pass through unchanged.
  EXPECT_TRUE(WriteFileSynced(view.get(), "/r/a/g", "z").ok());
  EXPECT_TRUE(env.FileExists("/r/a/g").ok());
}

}  // namespace
}  // namespace ckptspec
