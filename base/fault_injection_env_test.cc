#include "base/fault_injection_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "base/in_memory_env.h"

namespace ckptspec {
namespace {

// Every test runs over both kinds of base: the in-memory store MemEnv wraps, and the real disk.
enum class Base { kInMemory, kPosix };

class FaultInjectionEnvTest : public testing::TestWithParam<Base> {
 protected:
  void SetUp() override {
    if (GetParam() == Base::kInMemory) {
      memory_ = std::make_unique<InMemoryEnv>();
      base_ = memory_.get();
      root_ = "/root";
    } else {
      char tmpl[] = "/tmp/ckptspec_fault_env_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      temp_dir_ = tmpl;
      base_ = Env::Posix();
      root_ = JoinPath(temp_dir_, "root");
    }
    ASSERT_TRUE(base_->CreateDir(root_).ok());
    env_ = std::make_unique<FaultInjectionEnv>(base_);
  }
  void TearDown() override {
    if (!temp_dir_.empty()) Env::Posix()->RemoveTree(temp_dir_).IgnoreError();
  }

  std::string Path(const std::string& name) const { return JoinPath(root_, name); }
  // The whole file as `env` reads it, or "<status>".
  static std::string Read(Env* env, const std::string& path) {
    std::string out;
    const Status s = ReadFileToString(env, path, 1 << 20, &out);
    return s.ok() ? out : "<" + s.ToString() + ">";
  }

  std::unique_ptr<InMemoryEnv> memory_;
  std::string temp_dir_;
  Env* base_ = nullptr;
  std::string root_;
  std::unique_ptr<FaultInjectionEnv> env_;
};

TEST_P(FaultInjectionEnvTest, LogsEveryCallOnTheEnvAndOnItsFiles) {
  env_->ResetOpCount();
  const std::string a = Path("a");
  std::unique_ptr<WritableFile> w;
  ASSERT_TRUE(env_->NewWritableFile(a, &w).ok());
  ASSERT_TRUE(w->Append("xyz", 3).ok());
  ASSERT_TRUE(w->Sync().ok());
  ASSERT_TRUE(w->Close().ok());
  ASSERT_TRUE(w->Close().ok());  // closed already: no operation
  std::unique_ptr<RandomAccessFile> r;
  ASSERT_TRUE(env_->NewRandomAccessFile(a, &r).ok());
  char buf[3];
  size_t got = 0;
  ASSERT_TRUE(r->Read(0, 3, buf, &got).ok());
  ASSERT_TRUE(env_->RenameFile(a, Path("b")).ok());
  ASSERT_TRUE(env_->SyncDir(root_).ok());
  EXPECT_EQ(env_->FileExists(a).code(), Status::Code::kNotFound);  // a failing call counts too
  const std::vector<std::string> expected = {
      "0 NewWritableFile " + a,
      "1 Append " + a,
      "2 Sync " + a,
      "3 Close " + a,
      "4 NewRandomAccessFile " + a,
      "5 Read " + a,
      "6 RenameFile " + a + " -> " + Path("b"),
      "7 SyncDir " + root_,
      "8 FileExists " + a,
  };
  EXPECT_EQ(env_->op_log(), expected);
  EXPECT_EQ(env_->op_count(), 9);
  env_->ResetOpCount();
  EXPECT_EQ(env_->op_count(), 0);
  EXPECT_TRUE(env_->op_log().empty());
  const Status closed = w->Append("x", 1);  // counted, then refused
  EXPECT_EQ(closed.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(closed.message(), a + ": use after close");
  EXPECT_EQ(env_->op_log(), std::vector<std::string>{"0 Append " + a});
}

TEST_P(FaultInjectionEnvTest, CrashAtOpFailsThatOpAndEveryLaterOneWithoutReachingTheBase) {
  const std::string a = Path("a");
  env_->ResetOpCount();
  env_->CrashAtOp(2);
  std::unique_ptr<WritableFile> w;
  ASSERT_TRUE(env_->NewWritableFile(a, &w).ok());  // op 0
  ASSERT_TRUE(w->Append("x", 1).ok());             // op 1
  const Status sync = w->Sync();                   // op 2
  EXPECT_EQ(sync.code(), Status::Code::kIOError);
  EXPECT_EQ(sync.message(), a + ": Sync after a simulated crash");
  EXPECT_TRUE(env_->crashed());
  EXPECT_EQ(env_->CreateDir(Path("d")).message(),
            Path("d") + ": CreateDir after a simulated crash");
  EXPECT_EQ(base_->FileExists(Path("d")).code(), Status::Code::kNotFound);  // never made
  EXPECT_EQ(env_->op_count(), 4);
  EXPECT_EQ(env_->op_log()[2], "2 Sync " + a);

  env_->Restart();
  EXPECT_FALSE(env_->crashed());
  const Status dead = w->Append("y", 1);
  EXPECT_EQ(dead.code(), Status::Code::kIOError);
  EXPECT_EQ(dead.message(), a + ": file died in a crash");
  EXPECT_EQ(w->Close().message(), a + ": file died in a crash");
  uint64_t size = 0;
  ASSERT_TRUE(base_->GetFileSize(a, &size).ok());
  EXPECT_EQ(size, 1u);  // the append before the crash reached the base; the later one did not
  EXPECT_TRUE(env_->CreateDir(Path("d")).ok());
  EXPECT_TRUE(base_->FileExists(Path("d")).ok());
}

// A save replayed with a crash at every operation: on either base, the file that
// ReplaceFileAtomically replaces holds the old content or the new one, never anything else, and
// the new one once the crash falls after the save.
TEST_P(FaultInjectionEnvTest, CrashAtEveryOperationOfAnAtomicReplace) {
  const std::string f = Path("f");
  ASSERT_TRUE(ReplaceFileAtomically(env_.get(), f, "old").ok());
  env_->ResetOpCount();
  ASSERT_TRUE(ReplaceFileAtomically(env_.get(), f, "new").ok());
  const int64_t ops = env_->op_count();
  ASSERT_GT(ops, 4);
  for (int64_t k = 0; k <= ops; ++k) {
    SCOPED_TRACE("crash at operation " + std::to_string(k));
    ASSERT_TRUE(ReplaceFileAtomically(env_.get(), f, "old").ok());
    env_->ResetOpCount();
    env_->CrashAtOp(k);
    const Status s = ReplaceFileAtomically(env_.get(), f, "new");
    EXPECT_EQ(s.ok(), k == ops);
    EXPECT_EQ(env_->crashed(), k < ops);
    env_->Restart();
    EXPECT_EQ(Read(base_, f), k < ops - 1 ? "old" : "new");  // the rename is the last but one
  }
}

TEST_P(FaultInjectionEnvTest, FailOpIsOneShot) {
  env_->ResetOpCount();
  env_->FailOp(1);
  EXPECT_TRUE(env_->CreateDir(Path("a")).ok());
  const Status failed = env_->CreateDir(Path("b"));
  EXPECT_EQ(failed.code(), Status::Code::kIOError);
  EXPECT_EQ(failed.message(), Path("b") + ": injected I/O error in CreateDir (operation 1)");
  EXPECT_EQ(base_->FileExists(Path("b")).code(), Status::Code::kNotFound);
  EXPECT_FALSE(env_->crashed());
  EXPECT_TRUE(env_->CreateDir(Path("b")).ok());
  EXPECT_TRUE(base_->FileExists(Path("b")).ok());
}

TEST_P(FaultInjectionEnvTest, FailWritesToFailsAppendsToMatchingPathsOnly) {
  env_->FailWritesTo("bad");
  const std::string bad = Path("bad_file");
  std::unique_ptr<WritableFile> w;
  ASSERT_TRUE(env_->NewWritableFile(bad, &w).ok());
  const Status append = w->Append("x", 1);
  EXPECT_EQ(append.code(), Status::Code::kIOError);
  EXPECT_EQ(append.message(), bad + ": injected write error");
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(Read(base_, bad), "");  // the byte never reached the base
  EXPECT_TRUE(WriteFileSynced(env_.get(), Path("good_file"), "x").ok());
  EXPECT_EQ(Read(base_, Path("good_file")), "x");
  env_->ClearFaults();
  EXPECT_TRUE(WriteFileSynced(env_.get(), bad, "x").ok());
  EXPECT_EQ(Read(base_, bad), "x");
}

TEST_P(FaultInjectionEnvTest, ReadFaultsFlipAndTruncateWithoutChangingTheBase) {
  const std::string f = Path("f");
  ASSERT_TRUE(WriteFileSynced(base_, f, "abcd").ok());
  env_->AddReadFault({f, ReadFault::Kind::kFlipBit, 1, 0});
  EXPECT_EQ(Read(env_.get(), f), "accd");
  env_->ClearFaults();
  env_->AddReadFault({f, ReadFault::Kind::kTruncate, 2, 0});
  EXPECT_EQ(Read(env_.get(), f), "ab");
  uint64_t size = 0;
  ASSERT_TRUE(env_->GetFileSize(f, &size).ok());
  EXPECT_EQ(size, 2u);
  ASSERT_TRUE(env_->GetFileStoredSize(f, &size).ok());
  EXPECT_LE(size, 2u);
  std::unique_ptr<RandomAccessFile> r;
  ASSERT_TRUE(env_->NewRandomAccessFile(f, &r).ok());
  char byte = 0;
  size_t got = 7;
  ASSERT_TRUE(r->Read(3, 1, &byte, &got).ok());  // past the size reads see
  EXPECT_EQ(got, 0u);
  env_->ClearFaults();
  EXPECT_EQ(Read(env_.get(), f), "abcd");
  EXPECT_EQ(Read(base_, f), "abcd");
}

TEST_P(FaultInjectionEnvTest, RemoveTreeCountsEachStepAndACrashStopsItHalfway) {
  ASSERT_TRUE(CreateDirs(base_, Path("t/sub")).ok());
  ASSERT_TRUE(WriteFileSynced(base_, Path("t/sub/x"), "1").ok());
  ASSERT_TRUE(WriteFileSynced(base_, Path("t/y"), "2").ok());
  env_->ResetOpCount();
  env_->CrashAtOp(5);  // IsDirectory t, GetChildren t, IsDirectory t/sub, GetChildren t/sub, ...
  EXPECT_EQ(env_->RemoveTree(Path("t")).code(), Status::Code::kIOError);
  const std::vector<std::string> log = env_->op_log();
  ASSERT_EQ(log.size(), 6u);
  EXPECT_EQ(log[4], "4 IsDirectory " + Path("t/sub/x"));
  EXPECT_EQ(log[5], "5 RemoveFile " + Path("t/sub/x"));
  EXPECT_TRUE(base_->FileExists(Path("t/sub/x")).ok());
  env_->Restart();
  env_->ResetOpCount();
  ASSERT_TRUE(env_->RemoveTree(Path("t")).ok());
  EXPECT_EQ(env_->op_count(), 10);  // 4 IsDirectory, 2 GetChildren, 2 RemoveFile, 2 RemoveDir
  EXPECT_EQ(base_->FileExists(Path("t")).code(), Status::Code::kNotFound);
}

TEST_P(FaultInjectionEnvTest, NumbersCallsFromSeveralThreadsOnceEach) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 200;
  env_->ResetOpCount();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      const std::string path = Path("file_" + std::to_string(t));
      for (int i = 0; i < kCalls; ++i) env_->FileExists(path).IgnoreError();
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<std::string> log = env_->op_log();
  ASSERT_EQ(env_->op_count(), kThreads * kCalls);
  ASSERT_EQ(log.size(), static_cast<size_t>(kThreads * kCalls));
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].rfind(std::to_string(i) + " FileExists " + Path("file_"), 0), 0u) << log[i];
  }
}

std::string BaseName(const testing::TestParamInfo<Base>& info) {
  return info.param == Base::kInMemory ? "InMemory" : "Posix";
}

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectionEnvTest,
                         testing::Values(Base::kInMemory, Base::kPosix), BaseName);

// Env's contract: RemoveTree never follows a symbolic link, so nothing outside the tree is
// touched. IsDirectory does follow one; the walk asks the base's confined view before descending.
TEST(FaultInjectionEnvPosixTest, RemoveTreeRemovesALinkToADirectoryItself) {
  char tmpl[] = "/tmp/ckptspec_fault_env_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Env* posix = Env::Posix();
  ASSERT_TRUE(CreateDirs(posix, JoinPath(dir, "outside")).ok());
  ASSERT_TRUE(WriteFileSynced(posix, JoinPath(dir, "outside/keep"), "k").ok());
  ASSERT_TRUE(CreateDirs(posix, JoinPath(dir, "tree")).ok());
  ASSERT_EQ(symlink(JoinPath(dir, "outside").c_str(), JoinPath(dir, "tree/link").c_str()), 0);
  FaultInjectionEnv env(posix);
  EXPECT_TRUE(env.RemoveTree(JoinPath(dir, "tree")).ok());
  EXPECT_EQ(posix->FileExists(JoinPath(dir, "tree")).code(), Status::Code::kNotFound);
  EXPECT_TRUE(posix->FileExists(JoinPath(dir, "outside/keep")).ok());
  posix->RemoveTree(dir).IgnoreError();
}

}  // namespace
}  // namespace ckptspec
