#include "base/mem_env.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <string>

#include <unistd.h>

namespace ckptspec {
namespace {

std::string Read(Env* env, const std::string& path) {
  std::string out;
  const Status s = ReadFileToString(env, path, 1 << 20, &out);
  return s.ok() ? out : "<" + s.ToString() + ">";
}

TEST(MemEnvTest, WriteReadRenameList) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/d").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/d/a", "hello").ok());
  EXPECT_EQ(Read(&env, "/d/a"), "hello");
  ASSERT_TRUE(env.RenameFile("/d/a", "/d/b").ok());
  EXPECT_FALSE(env.FileExists("/d/a").ok());
  std::vector<std::string> names;
  ASSERT_TRUE(env.GetChildren("/d", &names).ok());
  EXPECT_EQ(names, std::vector<std::string>{"b"});
  EXPECT_EQ(env.FileExists("/nope/x").code(), Status::Code::kNotFound);
  EXPECT_EQ(env.CreateDir("/d/../e").code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(env.CreateDir("/d/sub").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/d/sub/x", "1").ok());
  EXPECT_FALSE(env.RemoveDir("/d/sub").ok());  // not empty
  ASSERT_TRUE(env.RemoveTree("/d").ok());
  EXPECT_FALSE(env.FileExists("/d").ok());
}

TEST(MemEnvTest, PowerLossDropsUnsyncedTailAndUnsyncedEntries) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/d").ok());
  ASSERT_TRUE(env.SyncDir("/").ok());
  std::unique_ptr<WritableFile> f;
  ASSERT_TRUE(env.NewWritableFile("/d/a", &f).ok());
  ASSERT_TRUE(f->Append("abc", 3).ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("def", 3).ok());
  ASSERT_TRUE(env.SyncDir("/d").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/d/unsynced_entry", "x").ok());
  env.SimulatePowerLoss();
  EXPECT_EQ(Read(&env, "/d/a"), "abc");
  EXPECT_FALSE(env.FileExists("/d/unsynced_entry").ok());
  EXPECT_FALSE(f->Append("g", 1).ok());  // the handle died with the machine
}

TEST(MemEnvTest, RenameIsDurableOnlyAfterDirSync) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/d").ok());
  ASSERT_TRUE(env.SyncDir("/").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/d/t", "new").ok());
  ASSERT_TRUE(env.SyncDir("/d").ok());
  ASSERT_TRUE(env.RenameFile("/d/t", "/d/final").ok());
  env.SimulatePowerLoss();
  EXPECT_TRUE(env.FileExists("/d/t").ok());
  EXPECT_FALSE(env.FileExists("/d/final").ok());

  ASSERT_TRUE(env.RenameFile("/d/t", "/d/final").ok());
  ASSERT_TRUE(env.SyncDir("/d").ok());
  env.SimulatePowerLoss();
  EXPECT_EQ(Read(&env, "/d/final"), "new");
  EXPECT_FALSE(env.FileExists("/d/t").ok());
}

TEST(MemEnvTest, UnsyncedDirectoryCreationIsLost) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/d").ok());
  ASSERT_TRUE(WriteFileSynced(&env, "/d/a", "a").ok());
  ASSERT_TRUE(env.SyncDir("/d").ok());
  env.SimulatePowerLoss();  // "/" never synced: /d is gone with everything in it
  EXPECT_FALSE(env.FileExists("/d").ok());
}

TEST(MemEnvTest, CrashAtOpFailsThatOpAndEveryLaterOne) {
  MemEnv env;
  ASSERT_TRUE(env.CreateDir("/d").ok());
  env.ResetOpCount();
  env.CrashAtOp(2);
  std::unique_ptr<WritableFile> f;
  ASSERT_TRUE(env.NewWritableFile("/d/a", &f).ok());    // op 0
  ASSERT_TRUE(f->Append("x", 1).ok());                  // op 1
  EXPECT_EQ(f->Sync().code(), Status::Code::kIOError);  // op 2
  EXPECT_TRUE(env.crashed());
  EXPECT_FALSE(env.SyncDir("/d").ok());
  EXPECT_EQ(env.op_count(), 4);
  EXPECT_EQ(env.op_log()[2], "2 Sync /d/a");
  env.SimulatePowerLoss();
  EXPECT_FALSE(env.crashed());
  EXPECT_TRUE(env.SyncDir("/").ok());
  EXPECT_FALSE(env.FileExists("/d").ok());  // created but never made durable
}

TEST(MemEnvTest, FailOpAndFailWritesAreOneShotAndPathScoped) {
  MemEnv env;
  env.ResetOpCount();
  env.FailOp(1);
  EXPECT_TRUE(env.CreateDir("/a").ok());
  EXPECT_EQ(env.CreateDir("/b").code(), Status::Code::kIOError);
  EXPECT_TRUE(env.CreateDir("/b").ok());
  env.FailWritesTo("bad");
  EXPECT_FALSE(WriteFileSynced(&env, "/a/bad_file", "x").ok());
  EXPECT_TRUE(WriteFileSynced(&env, "/a/good_file", "x").ok());
  env.ClearFaults();
  EXPECT_TRUE(WriteFileSynced(&env, "/a/bad_file", "x").ok());
}

TEST(MemEnvTest, ReadFaultsFlipAndTruncateWithoutChangingStoredBytes) {
  MemEnv env;
  ASSERT_TRUE(WriteFileSynced(&env, "/f", "abcd").ok());
  env.AddReadFault({"/f", ReadFault::Kind::kFlipBit, 1, 0});
  EXPECT_EQ(Read(&env, "/f"), "accd");
  env.ClearFaults();
  env.AddReadFault({"/f", ReadFault::Kind::kTruncate, 2, 0});
  EXPECT_EQ(Read(&env, "/f"), "ab");
  env.ClearFaults();
  EXPECT_EQ(Read(&env, "/f"), "abcd");
  ASSERT_TRUE(env.CorruptStoredByte("/f", 0, 0x01).ok());
  EXPECT_EQ(Read(&env, "/f"), "`bcd");
}

TEST(MemEnvTest, ReadFileToStringChecksTheLimitBeforeAllocating) {
  MemEnv env;
  ASSERT_TRUE(WriteFileSynced(&env, "/f", std::string(100, 'x')).ok());
  std::string out;
  const Status s = ReadFileToString(&env, "/f", 10, &out);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("/f"), std::string::npos);
}

// A file's content is kept in blocks (small appends share one, large ones get their own): for any
// sequence of appends, syncs, stored corruptions, truncations and power losses, what reads see is
// what one string written the same way would hold, across every block boundary.
RC_GTEST_PROP(MemEnvTest, FileContentEqualsAStringWrittenTheSameWay, ()) {
  MemEnv env;
  std::unique_ptr<WritableFile> file;
  RC_ASSERT(env.NewWritableFile("/f", &file).ok());
  RC_ASSERT(env.SyncDir("/").ok());
  std::string model;
  size_t synced = 0;
  bool open = true;
  const int steps = *rc::gen::inRange(1, 40);
  for (int step = 0; step < steps; ++step) {
    const int what = *rc::gen::inRange(0, 10);
    if (what < 5 && open) {
      const size_t n = *rc::gen::oneOf(rc::gen::inRange<size_t>(0, 300),
                                       rc::gen::inRange<size_t>(60000, 140000));
      std::string bytes(n, '\0');
      for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((model.size() + i) * 131 + step);
      RC_ASSERT(file->Append(bytes.data(), bytes.size()).ok());
      model += bytes;
    } else if (what == 5 && open) {
      RC_ASSERT(file->Sync().ok());
      synced = model.size();
    } else if (what == 6 && !model.empty()) {
      const uint64_t at = *rc::gen::inRange<uint64_t>(0, model.size());
      RC_ASSERT(env.CorruptStoredByte("/f", at, 0x5a).ok());
      model[at] = static_cast<char>(model[at] ^ 0x5a);
    } else if (what == 7) {
      const uint64_t keep = *rc::gen::inRange<uint64_t>(0, model.size() + 2);
      RC_ASSERT(env.TruncateStored("/f", keep).ok());
      if (keep < model.size()) model.resize(keep);
      synced = std::min(synced, model.size());
    } else if (what == 8) {
      env.SimulatePowerLoss();  // the file dies; the durable entry keeps its synced bytes
      model.resize(synced);
      open = false;
    }
    uint64_t size = 0;
    RC_ASSERT(env.GetFileSize("/f", &size).ok());
    RC_ASSERT(size == model.size());
    std::string whole;
    RC_ASSERT(ReadFileToString(&env, "/f", 1 << 24, &whole).ok());
    RC_ASSERT(whole == model);
    if (!model.empty()) {  // a read that starts and ends inside blocks
      const uint64_t from = *rc::gen::inRange<uint64_t>(0, model.size());
      const size_t n = *rc::gen::inRange<size_t>(0, model.size() - from + 1);
      std::unique_ptr<RandomAccessFile> reader;
      RC_ASSERT(env.NewRandomAccessFile("/f", &reader).ok());
      std::string part(n, '\0');
      RC_ASSERT(ReadExactly(*reader, "/f", from, n, part.data()).ok());
      RC_ASSERT(part == model.substr(from, n));
    }
  }
}

TEST(PosixEnvTest, BasicOperations) {
  char tmpl[] = "/tmp/ckptspec_posix_env_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Env* env = Env::Posix();
  ASSERT_TRUE(ReplaceFileAtomically(env, JoinPath(dir, "a"), "one").ok());
  ASSERT_TRUE(ReplaceFileAtomically(env, JoinPath(dir, "a"), "two").ok());
  EXPECT_EQ(Read(env, JoinPath(dir, "a")), "two");
  ASSERT_TRUE(CreateDirs(env, JoinPath(dir, "x/y")).ok());
  std::vector<std::string> names;
  ASSERT_TRUE(env->GetChildren(dir, &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "x"}));
  EXPECT_EQ(env->FileExists(JoinPath(dir, "missing")).code(), Status::Code::kNotFound);
  ASSERT_TRUE(env->RemoveTree(dir).ok());
  EXPECT_FALSE(env->FileExists(dir).ok());
}

}  // namespace
}  // namespace ckptspec
