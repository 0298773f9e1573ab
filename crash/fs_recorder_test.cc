// The recorder and its interposer driven through real processes: fs_exerciser (the calls its
// arguments name) and python3 doing what a checkpointer does. The interposer is preloaded into
// those child processes only (this binary may be built with ASan, which must come first).
#include "crash/fs_recorder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace ckptspec {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

FileId IdOf(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return FileId();
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

struct ChildRun {
  int exit_code = -1;
  pid_t pid = -1;
  std::string out;  // its stdout
};

// Runs argv[0] (searched in PATH) with this environment plus `extra_env` (which replaces names it
// sets), its stdout in `out_file`; waits for it.
ChildRun RunChild(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                  const std::string& out_file) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& extra : extra_env) {
      replaced |= entry.compare(0, extra.find('=') + 1, extra, 0, extra.find('=') + 1) == 0;
    }
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp, args;
  for (std::string& e : env) envp.push_back(&e[0]);
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(&a[0]);
  args.push_back(nullptr);
  ChildRun run;
  int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return run;
  run.pid = fork();
  if (run.pid == 0) {
    dup2(out, 1);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out);
  int status = 0;
  if (run.pid > 0 && waitpid(run.pid, &status, 0) == run.pid && WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
  }
  run.out = ReadFile(out_file);
  return run;
}

// A scratch directory with a recorder, a root and a place outside the root.
class Scratch {
 public:
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fs_recorder_test-XXXXXX";
    base_ = mkdtemp(&pattern[0]) ? pattern : "";
    root = base_ + "/root";
    outside = base_ + "/outside";
    mkdir(root.c_str(), 0755);
    mkdir(outside.c_str(), 0755);
    status = FsRecorder::Create(base_, &recorder);
  }
  ~Scratch() {
    recorder.reset();
    const std::string command = "rm -rf '" + base_ + "'";
    if (!base_.empty() && std::system(command.c_str()) != 0) ADD_FAILURE() << command;
  }
  // Starts a fresh recording (a new log directory each time).
  Status Start() { return recorder->Start(root, base_ + "/log" + std::to_string(++starts_)); }
  ChildRun Exercise(const std::vector<std::string>& ops, bool preload = true) {
    std::vector<std::string> argv = {CKPTSPEC_FS_EXERCISER_PATH};
    argv.insert(argv.end(), ops.begin(), ops.end());
    return RunChild(argv, preload ? recorder->ChildEnvironment() : std::vector<std::string>{},
                    base_ + "/stdout");
  }
  std::string In(const std::string& relative) const { return root + "/" + relative; }
  const std::string& base() const { return base_; }
  std::string LogOf(pid_t pid) const {
    return base_ + "/log" + std::to_string(starts_) + "/rec." + std::to_string(pid) + ".bin";
  }

  std::string root, outside;
  Status status;
  std::unique_ptr<FsRecorder> recorder;

 private:
  std::string base_;
  int starts_ = 0;
};

std::string Describe(const std::vector<FsOp>& ops) {
  std::string s;
  for (const FsOp& op : ops) {
    s += std::to_string(op.seq) + " " + FsOpKindName(op.kind) + " " + op.path;
    if (!op.path2.empty()) s += " -> " + op.path2;
    if (!op.data.empty()) s += " @" + std::to_string(op.offset) + " '" + op.data + "'";
    if (op.err != 0) s += " err " + std::to_string(op.err) + (op.injected ? " injected" : "");
    if (!op.detail.empty()) s += " (" + op.detail + ")";
    s += "\n";
  }
  return s;
}

std::vector<FsOp> Recording(Scratch& scratch) {
  std::vector<FsOp> ops;
  Status s = scratch.recorder->ReadRecording(&ops);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ops;
}

TEST(FsRecorderTest, RecordsEveryOperationUnderTheRootWithItsInodeOffsetAndData) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  const std::string o = scratch.outside;
  ChildRun run = scratch.Exercise({"mkdir",
                                   scratch.In("d"),
                                   "open",
                                   "a",
                                   scratch.In("d/f"),
                                   "cw",
                                   "write",
                                   "a",
                                   "hello",
                                   "pwrite",
                                   "a",
                                   "10",
                                   "xy",
                                   "writev",
                                   "a",
                                   "ab",
                                   "cd",
                                   "ftruncate",
                                   "a",
                                   "3",
                                   "fsync",
                                   "a",
                                   "fdatasync",
                                   "a",
                                   "open",
                                   "b",
                                   scratch.In("d"),
                                   "d",
                                   "fsync",
                                   "b",
                                   "rename",
                                   scratch.In("d/f"),
                                   scratch.In("d/g"),
                                   "link",
                                   scratch.In("d/g"),
                                   scratch.In("d/h"),
                                   "unlink",
                                   scratch.In("d/h"),
                                   "open",
                                   "c",
                                   o + "/x",
                                   "cw",
                                   "write",
                                   "c",
                                   "no",
                                   "fsync",
                                   "c",
                                   "rename",
                                   o + "/x",
                                   o + "/y",
                                   "open",
                                   "e",
                                   scratch.In("d/./../d/g"),
                                   "wt",
                                   "pwritev",
                                   "e",
                                   "4",
                                   "P",
                                   "Q",
                                   "mkdirat",
                                   "b",
                                   "sub",
                                   "rmdirat",
                                   "b",
                                   "sub",
                                   "unlinkat",
                                   "b",
                                   "g",
                                   "mkdir",
                                   scratch.In("e"),
                                   "rmdir",
                                   scratch.In("e"),
                                   "chdir",
                                   scratch.root,
                                   "creat",
                                   "f",
                                   "rel",
                                   "write",
                                   "f",
                                   "R",
                                   "truncate",
                                   "rel",
                                   "7",
                                   "sync"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<FsOp> ops = Recording(scratch);
  const std::string expected =
      "0 mkdir d\n"
      "1 create d/f\n"
      "2 write d/f @0 'hello'\n"
      "3 write d/f @10 'xy'\n"
      "4 write d/f @5 'abcd'\n"
      "5 truncate d/f\n"
      "6 fsync d/f\n"
      "7 fdatasync d/f\n"
      "8 fsync d\n"
      "9 rename d/f -> d/g\n"
      "10 link d/g -> d/h\n"
      "11 unlink d/h\n"
      "12 truncate d/g\n"
      "13 write d/g @4 'PQ'\n"
      "14 mkdir d/sub\n"
      "15 rmdir d/sub\n"
      "16 unlink d/g\n"
      "17 mkdir e\n"
      "18 rmdir e\n"
      "19 create rel\n"
      "20 write rel @0 'R'\n"
      "21 truncate rel\n"
      "22 sync .\n";
  ASSERT_EQ(Describe(ops), expected);
  EXPECT_EQ(scratch.recorder->operations_so_far(), 23u);
  for (const FsOp& op : ops) EXPECT_EQ(op.pid, run.pid) << op.seq;
  const FileId d = IdOf(scratch.In("d"));
  const FileId root = IdOf(scratch.root);
  const FileId f = ops[1].file;  // d/f, later d/g
  EXPECT_NE(f, FileId());
  EXPECT_EQ(ops[0].file, d);
  EXPECT_EQ(ops[0].dir, root);
  EXPECT_EQ(ops[0].name, "d");
  EXPECT_EQ(ops[1].dir, d);
  EXPECT_EQ(ops[1].name, "f");
  for (int i : {2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16}) EXPECT_EQ(ops[i].file, f) << i;
  EXPECT_EQ(ops[5].length, 3u);
  EXPECT_EQ(ops[8].file, d);  // the directory's fsync
  EXPECT_EQ(ops[9].dir, d);
  EXPECT_EQ(ops[9].name, "f");
  EXPECT_EQ(ops[9].dir2, d);
  EXPECT_EQ(ops[9].name2, "g");
  EXPECT_EQ(ops[9].replaced, FileId());
  EXPECT_EQ(ops[10].name2, "h");
  EXPECT_EQ(ops[11].name, "h");
  EXPECT_EQ(ops[12].length, 0u);
  EXPECT_NE(ops[14].file, FileId());
  EXPECT_EQ(ops[14].dir, d);
  EXPECT_EQ(ops[15].file, ops[14].file);
  EXPECT_EQ(ops[16].dir, d);
  EXPECT_EQ(ops[16].name, "g");
  EXPECT_EQ(ops[19].file, IdOf(scratch.In("rel")));
  EXPECT_EQ(ops[21].length, 7u);
  EXPECT_EQ(scratch.recorder->unseen_events(), 0u);
}

TEST(FsRecorderTest, RenameOverAnExistingNameRecordsWhatItReplaced) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  WriteFile(scratch.In("old"), "old");
  const FileId old = IdOf(scratch.In("old"));
  ASSERT_TRUE(scratch.Start().ok());
  ChildRun run = scratch.Exercise({"open", "a", scratch.In("new"), "cw", "open", "d", scratch.root,
                                   "d", "renameat2", "d", "new", "old", "open", "b",
                                   scratch.In("old"), "wa", "write", "b", "tail"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<FsOp> ops = Recording(scratch);
  ASSERT_EQ(Describe(ops), "0 create new\n1 rename new -> old\n2 write old @0 'tail'\n");
  EXPECT_EQ(ops[1].replaced, old);
  EXPECT_EQ(ops[1].file, ops[0].file);
  EXPECT_EQ(ops[2].file, ops[0].file);
}

TEST(FsRecorderTest, AFileThatLeftTheRootIsNoLongerRecorded) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  const std::string o = scratch.outside;
  // Its only name is outside once linked there and unlinked here; then a rename moves another
  // file out.
  ChildRun run = scratch.Exercise({"open",
                                   "a",
                                   scratch.In("f"),
                                   "cw",
                                   "link",
                                   scratch.In("f"),
                                   o + "/f",
                                   "unlink",
                                   scratch.In("f"),
                                   "open",
                                   "b",
                                   o + "/f",
                                   "w",
                                   "write",
                                   "b",
                                   "x",
                                   "open",
                                   "c",
                                   scratch.In("g"),
                                   "cw",
                                   "rename",
                                   scratch.In("g"),
                                   o + "/g",
                                   "write",
                                   "c",
                                   "y"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(Describe(Recording(scratch)), "0 create f\n1 unlink f\n2 create g\n3 unlink g\n");
}

TEST(FsRecorderTest, AppendsRecordTheFileSizeAsTheirOffset) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  WriteFile(scratch.In("log"), "12345");
  ASSERT_TRUE(scratch.Start().ok());
  ChildRun run = scratch.Exercise(
      {"open", "a", scratch.In("log"), "wa", "write", "a", "six", "pwritev2", "a", "0", "zero"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // pwritev2 at 0 on an O_APPEND descriptor appends (Linux ignores the offset).
  EXPECT_EQ(Describe(Recording(scratch)), "0 write log @5 'six'\n1 write log @8 'zero'\n");
  EXPECT_EQ(ReadFile(scratch.In("log")), "12345sixzero");
}

TEST(FsRecorderTest, NothingIsRecordedWhenPassiveOrStopped) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  const std::vector<std::string> ops = {"open", "a", scratch.In("f"), "cw", "write", "a", "x"};
  ChildRun without_preload = scratch.Exercise(ops, /*preload=*/false);
  ASSERT_EQ(without_preload.exit_code, 0);
  // Preloaded but without the control file: passive.
  std::vector<std::string> argv = {CKPTSPEC_FS_EXERCISER_PATH};
  argv.insert(argv.end(), ops.begin(), ops.end());
  ChildRun passive =
      RunChild(argv, {scratch.recorder->ChildEnvironment()[0]}, scratch.base() + "/stdout");
  ASSERT_EQ(passive.exit_code, 0) << passive.out;
  EXPECT_EQ(passive.out.find("open -1"), std::string::npos) << passive.out;
  EXPECT_NE(passive.out.find("\nwrite 1 0\n"), std::string::npos) << passive.out;
  ASSERT_TRUE(scratch.recorder->Stop().ok());
  ASSERT_EQ(scratch.Exercise(ops).exit_code, 0);
  EXPECT_EQ(scratch.recorder->operations_so_far(), 0u);
  EXPECT_EQ(Describe(Recording(scratch)), "");
  ASSERT_TRUE(scratch.Start().ok());
  ASSERT_EQ(scratch.Exercise({"open", "a", scratch.In("f"), "w", "write", "a", "y"}).exit_code, 0);
  EXPECT_EQ(Describe(Recording(scratch)), "0 write f @0 'y'\n");
}

TEST(FsRecorderTest, WhatCannotBeFollowedIsRecordedAsUnseen) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  const std::string o = scratch.outside;
  WriteFile(o + "/moved", "m");
  ChildRun run = scratch.Exercise({"open",
                                   "a",
                                   scratch.In("f"),
                                   "cr",
                                   "ftruncate",
                                   "a",
                                   "4096",
                                   "mmap",
                                   "a",
                                   "4096",
                                   "fopen",
                                   scratch.In("stdio"),
                                   "symlink",
                                   "f",
                                   scratch.In("link"),
                                   "syscall_write",
                                   "a",
                                   "raw",
                                   "punch",
                                   "a",
                                   "0",
                                   "10",
                                   "fallocate",
                                   "a",
                                   "0",
                                   "8192",
                                   "rename",
                                   o + "/moved",
                                   scratch.In("moved"),
                                   "open",
                                   "b",
                                   o + "/out",
                                   "cw",
                                   "mmap",
                                   "b",
                                   "4096",
                                   "fopen",
                                   o + "/stdio"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<FsOp> ops = Recording(scratch);
  std::string kinds;
  for (const FsOp& op : ops) kinds += std::string(FsOpKindName(op.kind)) + " " + op.path + "\n";
  ASSERT_EQ(kinds,
            "create f\ntruncate f\nunseen f\nunseen stdio\nunseen link\nunseen f\nunseen f\n"
            "truncate f\nunseen moved\n")
      << Describe(ops);
  EXPECT_NE(ops[2].detail.find("mmap"), std::string::npos) << ops[2].detail;
  EXPECT_NE(ops[3].detail.find("fopen"), std::string::npos) << ops[3].detail;
  EXPECT_NE(ops[4].detail.find("symlink"), std::string::npos) << ops[4].detail;
  EXPECT_NE(ops[5].detail.find("syscall"), std::string::npos) << ops[5].detail;
  EXPECT_NE(ops[6].detail.find("fallocate"), std::string::npos) << ops[6].detail;
  EXPECT_EQ(ops[7].length, 8192u);
  EXPECT_NE(ops[8].detail.find("from outside"), std::string::npos) << ops[8].detail;
  EXPECT_EQ(scratch.recorder->unseen_events(), 6u);
}

// The lines fs_exerciser printed for `op`, as "RESULT ERRNO" each.
std::vector<std::string> Results(const std::string& out, const std::string& op) {
  std::vector<std::string> results;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, op.size() + 1, op + " ") == 0)
      results.push_back(line.substr(op.size() + 1));
  }
  return results;
}

RC_GTEST_PROP(FsRecorderProperties, TheNthCountedOperationFailsAsTheFaultSays, ()) {
  const auto kind = *rc::gen::element(DiskFaultKind::kNoSpace, DiskFaultKind::kIoError,
                                      DiskFaultKind::kShortWrite, DiskFaultKind::kFsyncFails);
  const uint64_t nth = *rc::gen::inRange<uint64_t>(1, 5);
  const bool sticky = *rc::gen::arbitrary<bool>();
  const int count = *rc::gen::inRange(1, 6);
  const bool fsyncs = kind == DiskFaultKind::kFsyncFails;
  RC_TAG(DiskFaultKindName(kind));
  Scratch scratch;
  RC_ASSERT(scratch.status.ok());
  RC_ASSERT(scratch.Start().ok());
  scratch.recorder->SetFault({kind, nth, sticky});
  // The operations alternate between two processes: the count is shared.
  std::string out;
  std::vector<FsOp> ops;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> args = {"open",    "a",     scratch.In("f" + std::to_string(i)),
                                     "cw",      "write", "a",
                                     "data",    "fsync", "a",
                                     "open",    "b",     scratch.outside + "/x",
                                     "cw",      "write", "b",
                                     "outside", "fsync", "b"};
    ChildRun run = scratch.Exercise(args);
    RC_ASSERT(run.exit_code == 0);
    out += run.out;
  }
  const std::string op = fsyncs ? "fsync" : "write";
  std::vector<std::string> results = Results(out, op);
  RC_ASSERT(results.size() == static_cast<size_t>(2 * count));
  std::string expected_failure = kind == DiskFaultKind::kNoSpace      ? "-1 28"
                                 : kind == DiskFaultKind::kShortWrite ? "2 0"
                                                                      : "-1 5";
  uint64_t injected = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t counted = static_cast<uint64_t>(i) + 1;
    const bool fails = counted == nth || (sticky && counted > nth);
    injected += fails;
    const std::string ok = fsyncs ? "0 0" : "4 0";
    RC_ASSERT(results[2 * i] == (fails ? expected_failure : ok));
    RC_ASSERT(results[2 * i + 1] == (fsyncs ? "0 0" : "7 0"));  // outside the root: untouched
  }
  RC_ASSERT(scratch.recorder->faults_injected() == injected);
  RC_ASSERT(scratch.recorder->ReadRecording(&ops).ok());
  uint64_t recorded_injections = 0;
  for (const FsOp& recorded : ops) {
    if (!recorded.injected) continue;
    ++recorded_injections;
    RC_ASSERT(recorded.kind == (fsyncs ? FsOpKind::kFsync : FsOpKind::kWrite));
    RC_ASSERT(recorded.err == (kind == DiskFaultKind::kNoSpace      ? ENOSPC
                               : kind == DiskFaultKind::kShortWrite ? 0
                                                                    : EIO));
    if (kind == DiskFaultKind::kShortWrite) RC_ASSERT(recorded.data == "da");
  }
  RC_ASSERT(recorded_injections == injected);
}

TEST(FsRecorderTest, ACorruptedOrTruncatedLogIsANamedError) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  ChildRun run = scratch.Exercise({"open", "a", scratch.In("f"), "cw", "write", "a", "data"});
  ASSERT_EQ(run.exit_code, 0);
  const std::string log = scratch.LogOf(run.pid);
  const std::string good = ReadFile(log);
  ASSERT_GT(good.size(), 200u);
  std::vector<FsOp> ops;
  auto expect_error = [&](const std::string& bytes, const std::string& what) {
    WriteFile(log, bytes);
    Status s = scratch.recorder->ReadRecording(&ops);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.ToString();
  };
  expect_error(good.substr(0, good.size() - 1), log + ": the record at byte");
  std::string bad_magic = good;
  bad_magic[0] ^= 1;
  expect_error(bad_magic, "no record magic");
  std::string huge = good;
  huge[4] = huge[5] = huge[6] = '\xff';  // the first record's size
  expect_error(huge, "runs past the end of the file");
  std::string bad_kind = good;
  bad_kind[20] = 99;
  expect_error(bad_kind, "kind 99 is not an operation");
  std::string long_string = good;
  long_string[112] = '\x7f';  // the first string's length
  expect_error(long_string, "runs past its end");
  // The second record lost entirely: a gap in the sequence.
  uint32_t first_size = 0;
  std::memcpy(&first_size, good.data() + 4, 4);
  expect_error(good.substr(0, first_size), "operation 1 has no record");
  expect_error(good + good.substr(0, first_size), "operation 0 is in two records");
  WriteFile(log, good);
  EXPECT_TRUE(scratch.recorder->ReadRecording(&ops).ok());
}

// A checkpointer's moves in Python: makedirs, write + flush + fsync, os.replace, a directory's
// fsync, a thread, a forked child (writing to its parent's descriptor) and a spawned child
// writing, unlink and rmtree; and a fault seen as OSError.
constexpr char kPythonScript[] = R"(
import multiprocessing, os, shutil, sys, threading

def write_file(path):
    with open(path, "wb") as f:
        f.write(b"child")
        f.flush()
        os.fsync(f.fileno())

if __name__ == "__main__":
    root, outside, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "fault":
        fd = os.open(os.path.join(root, "f"), os.O_WRONLY | os.O_CREAT)
        for call in (lambda: os.write(fd, b"abc"), lambda: os.fsync(fd)):
            try:
                call()
                print("ok")
            except OSError as e:
                print("OSError", e.errno)
        sys.exit(0)
    step = os.path.join(root, "ckpt", "step1")
    os.makedirs(step)
    with open(os.path.join(step, "shard.tmp"), "wb") as f:
        f.write(b"tensor-bytes")
        f.flush()
        os.fsync(f.fileno())
    os.replace(os.path.join(step, "shard.tmp"), os.path.join(step, "shard.bin"))
    d = os.open(step, os.O_RDONLY)
    os.fsync(d)
    os.close(d)
    t = threading.Thread(target=write_file, args=(os.path.join(root, "thread.bin"),))
    t.start()
    t.join()
    fd = os.open(os.path.join(root, "forked.bin"), os.O_WRONLY | os.O_CREAT)
    forked = os.fork()
    if forked == 0:
        os.write(fd, b"forked")
        os._exit(0)
    os.waitpid(forked, 0)
    os.close(fd)
    print("forked", forked)
    child = multiprocessing.get_context("spawn").Process(
        target=write_file, args=(os.path.join(root, "spawned.bin"),))
    child.start()
    child.join()
    print("child", child.pid, child.exitcode)
    os.unlink(os.path.join(root, "thread.bin"))
    shutil.rmtree(os.path.join(root, "ckpt"))
    write_file(os.path.join(outside, "not-recorded.bin"))
)";

bool HavePython() { return std::system("python3 -c pass >/dev/null 2>&1") == 0; }

// Runs kPythonScript in `mode` ("save" or "fault") under the recorder.
ChildRun RunPythonCheckpointer(Scratch& scratch, const std::string& mode) {
  const std::string script = scratch.base() + "/checkpointer.py";
  WriteFile(script, kPythonScript);
  return RunChild({"python3", script, scratch.root, scratch.outside, mode},
                  scratch.recorder->ChildEnvironment(), scratch.base() + "/stdout");
}

TEST(FsRecorderTest, RecordsWhatAPythonCheckpointerDoesAcrossThreadsAndSpawnedChildren) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH";
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  ChildRun run = RunPythonCheckpointer(scratch, "save");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  int forked_pid = 0, child_pid = 0, child_exit = -1;
  ASSERT_EQ(
      std::sscanf(run.out.c_str(), "forked %d\nchild %d %d", &forked_pid, &child_pid, &child_exit),
      3)
      << run.out;
  ASSERT_EQ(child_exit, 0);
  std::vector<FsOp> ops = Recording(scratch);
  std::string expected =
      "0 mkdir ckpt\n"
      "1 mkdir ckpt/step1\n"
      "2 create ckpt/step1/shard.tmp\n"
      "3 write ckpt/step1/shard.tmp @0 'tensor-bytes'\n"
      "4 fsync ckpt/step1/shard.tmp\n"
      "5 rename ckpt/step1/shard.tmp -> ckpt/step1/shard.bin\n"
      "6 fsync ckpt/step1\n"
      "7 create thread.bin\n"
      "8 write thread.bin @0 'child'\n"
      "9 fsync thread.bin\n"
      "10 create forked.bin\n"
      "11 write forked.bin @0 'forked'\n"
      "12 create spawned.bin\n"
      "13 write spawned.bin @0 'child'\n"
      "14 fsync spawned.bin\n"
      "15 unlink thread.bin\n"
      "16 unlink ckpt/step1/shard.bin\n"
      "17 rmdir ckpt/step1\n"
      "18 rmdir ckpt\n";
  ASSERT_EQ(Describe(ops), expected);
  for (const FsOp& op : ops) {
    const int32_t pid = op.seq == 11                   ? forked_pid
                        : op.seq >= 12 && op.seq <= 14 ? child_pid
                                                       : run.pid;
    EXPECT_EQ(op.pid, pid) << op.seq;
  }
  EXPECT_EQ(ops[4].file, ops[2].file);
  EXPECT_EQ(ops[5].file, ops[2].file);
  EXPECT_EQ(ops[6].file, ops[1].file);
  EXPECT_EQ(ops[11].file, ops[10].file);
  EXPECT_EQ(ops[16].file, ops[2].file);
  EXPECT_EQ(ops[17].file, ops[1].file);
  EXPECT_EQ(ops[18].file, ops[0].file);
}

TEST(FsRecorderTest, APythonCheckpointerSeesInjectedFaultsAsOSError) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH";
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  ASSERT_TRUE(scratch.Start().ok());
  scratch.recorder->SetFault({DiskFaultKind::kNoSpace, 1, false});
  EXPECT_EQ(RunPythonCheckpointer(scratch, "fault").out, "OSError 28\nok\n");
  scratch.recorder->SetFault({DiskFaultKind::kFsyncFails, 1, false});
  EXPECT_EQ(RunPythonCheckpointer(scratch, "fault").out, "ok\nOSError 5\n");
  scratch.recorder->SetFault({DiskFaultKind::kIoError, 2, false});
  EXPECT_EQ(RunPythonCheckpointer(scratch, "fault").out, "ok\nok\n");
  EXPECT_EQ(scratch.recorder->faults_injected(), 0u);
}

TEST(FsRecorderTest, NamesAndDescriptions) {
  EXPECT_STREQ(DiskFaultKindName(DiskFaultKind::kNone), "none");
  EXPECT_STREQ(DiskFaultKindName(DiskFaultKind::kNoSpace), "ENOSPC on write");
  EXPECT_STREQ(DiskFaultKindName(DiskFaultKind::kIoError), "EIO on write");
  EXPECT_STREQ(DiskFaultKindName(DiskFaultKind::kShortWrite), "short write");
  EXPECT_STREQ(DiskFaultKindName(DiskFaultKind::kFsyncFails), "EIO from fsync");
  EXPECT_EQ(DescribeDiskFault({DiskFaultKind::kNoSpace, 3, true}),
            "ENOSPC on the 3rd write under the root (and every later one)");
  EXPECT_EQ(DescribeDiskFault({DiskFaultKind::kIoError, 11, false}),
            "EIO on the 11th write under the root");
  EXPECT_EQ(DescribeDiskFault({DiskFaultKind::kFsyncFails, 22, false}),
            "EIO from the 22nd fsync or fdatasync under the root");
  EXPECT_EQ(DescribeDiskFault({DiskFaultKind::kShortWrite, 1, false}),
            "a short write (half its bytes) on the 1st write of 2 bytes or more under the root");
  EXPECT_EQ(DescribeDiskFault(DiskFault()), "no fault");
}

TEST(FsRecorderTest, TheInterposerPathComesFromTheEnvironmentFirst) {
  std::string path;
  ASSERT_TRUE(FsInterposerPath(&path).ok());
  EXPECT_NE(path.find("libckptspec_fs_interposer.so"), std::string::npos) << path;
  const std::string missing = "/nonexistent/libckptspec_fs_interposer.so";
  setenv("CKPTSPEC_FS_INTERPOSER", missing.c_str(), 1);
  Status s = FsInterposerPath(&path);
  unsetenv("CKPTSPEC_FS_INTERPOSER");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(missing), std::string::npos) << s.ToString();
}

TEST(FsRecorderTest, StartNeedsAnExistingRootAndAFreshLogDirectory) {
  Scratch scratch;
  ASSERT_TRUE(scratch.status.ok()) << scratch.status.ToString();
  Status no_root = scratch.recorder->Start(scratch.base() + "/none", scratch.base() + "/log");
  EXPECT_FALSE(no_root.ok());
  EXPECT_NE(no_root.message().find("/none"), std::string::npos) << no_root.ToString();
  Status old_log = scratch.recorder->Start(scratch.root, scratch.outside);
  EXPECT_FALSE(old_log.ok());
  EXPECT_NE(old_log.message().find(scratch.outside), std::string::npos) << old_log.ToString();
  std::vector<FsOp> ops;
  EXPECT_FALSE(scratch.recorder->ReadRecording(&ops).ok());
}

}  // namespace
}  // namespace ckptspec
