// Checkpoints made by an attacker, against `verify` (verify.h) and the reference loader: each
// builds its hostile input here (sparse files by ftruncate, links, FIFOs; nothing large is
// written) and checks that the answer is a named finding or error, with nothing read that should
// not be: no crash, no hang, no allocation of what the file declares, no read outside the root.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/address_limit_test_util.h"
#include "base/mem_env.h"
#include "targets/reference/checksum_stream.h"
#include "targets/reference/format.h"
#include "targets/reference/reference_engine.h"
#include "targets/reference/verify.h"

namespace ckptspec {
namespace {

constexpr int64_t kIteration = 1;

// A fresh directory on the real disk, removed (without following links) at the end.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/ckptspec_hostile_XXXXXX";
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    if (!path_.empty()) {
      EXPECT_TRUE(Env::Posix()->RemoveTree(path_).ok());
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The index of iteration 1 with one file, shard_00000.bin of `file_size` bytes, and no item.
CheckpointMetadata OneFile(uint64_t file_size) {
  CheckpointMetadata md;
  md.iteration = kIteration;
  md.world_size = 1;
  md.files = {FileEntry{ShardFileName(0), file_size}};
  return md;
}

// One bf16 tensor "w" of `elements` elements in one chunk at the start of shard_00000.bin.
CheckpointMetadata OneChunk(uint64_t elements, uint64_t file_size, uint64_t checksum) {
  CheckpointMetadata md = OneFile(file_size);
  TensorEntry t;
  t.key = "w";
  t.dtype = DType::kBFloat16;
  t.global_shape = {static_cast<int64_t>(elements)};
  ChunkEntry c;
  c.box = Box{{0}, {static_cast<int64_t>(elements)}};
  c.extent = Extent{0, 0, 2 * elements, checksum};
  t.chunks.push_back(c);
  md.tensors.push_back(t);
  return md;
}

// Writes the tracker, iter_0000001/, its metadata and checksum (files are the caller's).
void WriteIndex(Env* env, const std::string& root, const CheckpointMetadata& md) {
  const std::string dir = JoinPath(root, IterationDirName(kIteration));
  ASSERT_TRUE(CreateDirs(env, dir).ok());
  const std::string text = EncodeMetadata(md);
  ASSERT_TRUE(WriteFileSynced(env, JoinPath(dir, kMetadataFileName), text).ok());
  ASSERT_TRUE(WriteFileSynced(env, JoinPath(dir, kMetadataChecksumFileName),
                              ChecksumHex(Checksum(text.data(), text.size())) + "\n")
                  .ok());
  ASSERT_TRUE(
      WriteFileSynced(env, JoinPath(root, kTrackerFileName), EncodeTracker(kIteration)).ok());
}

// A sparse file of `size` bytes: no data block is written.
void MakeSparseFile(const std::string& path, uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  ::close(fd);
}

// The checksum of `size` zero bytes.
uint64_t ZerosChecksum(uint64_t size) {
  std::vector<uint8_t> zeros(kStreamBlockBytes, 0);
  ChecksumStream stream;
  for (uint64_t done = 0; done < size; done += zeros.size()) {
    stream.Update(zeros.data(), static_cast<size_t>(std::min<uint64_t>(zeros.size(), size - done)));
  }
  return stream.Digest();
}

// One rank asking for elements [0, 16) of "w" (a bf16 tensor of `elements` >= 16 elements).
LoadRequest SmallPieceOfW(uint64_t elements) {
  ShardedTensor t;
  t.spec.key = "w";
  t.spec.dtype = DType::kBFloat16;
  t.spec.global_shape = {static_cast<int64_t>(elements)};
  t.spec.global_offset = {0};
  t.spec.local_shape = {16};
  t.data.assign(32, 0xff);
  LoadRequest request;
  request.iteration = kIteration;
  request.templates.resize(1);
  request.templates[0].tensors.push_back(t);
  return request;
}

Status LoadFrom(Env* env, const std::string& root, LoadRequest request, LoadResult* result,
                const ResourceLimits& limits = ResourceLimits()) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  options.limits = limits;
  ReferenceEngine engine(std::move(options));
  return engine.Load(std::move(request), result);
}

std::string AllFindings(const VerifyReport& report) {
  std::string all;
  for (const std::string& f : report.findings) all += f + "\n";
  return all;
}

// --- Row 2: a chunk of 32 Gi bf16 elements in a sparse 64 GiB file (100 KB on disk) -----------

constexpr uint64_t kHugeElements = uint64_t{32} << 30;

TEST(HostileCheckpoint, SparseHugeChunkIsRefusedBeforeAnyRead) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string root = tmp.path();
  const CheckpointMetadata md = OneChunk(kHugeElements, 2 * kHugeElements, 0x1234);
  ASSERT_NO_FATAL_FAILURE(WriteIndex(Env::Posix(), root, md));
  ASSERT_NO_FATAL_FAILURE(MakeSparseFile(
      JoinPath(JoinPath(root, IterationDirName(kIteration)), ShardFileName(0)), 2 * kHugeElements));
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), root, false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  EXPECT_NE(report.findings[0].find("exceed max_read_ratio = 16 (--max-read-ratio raises it)"),
            std::string::npos)
      << report.findings[0];
  EXPECT_EQ(report.bytes_checked, 0u);

  LoadResult result;
  const Status loaded = LoadFrom(Env::Posix(), root, SmallPieceOfW(kHugeElements), &result);
  EXPECT_EQ(loaded.code(), Status::Code::kNotSupported) << loaded.ToString();
  EXPECT_NE(loaded.message().find("max_read_ratio"), std::string::npos) << loaded.ToString();
}

// The regression test under a memory limit: verify and a load of a small piece, in a child
// process whose address space is capped far below the chunk's size, with the read budget raised
// so that the whole sparse chunk is read (and checksummed) for real. Reading it whole into memory,
// as verify once did, dies of std::bad_alloc there.
TEST(HostileCheckpoint, LargeChunkIsStreamedUnderAMemoryLimit) {
#ifdef CKPTSPEC_NO_ADDRESS_LIMIT
  GTEST_SKIP() << testing_util::kNoAddressLimitReason;
#endif
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string root = tmp.path();
  constexpr uint64_t kElements = uint64_t{1} << 30;  // 2 GiB of bf16 zeros, sparse on disk
  constexpr uint64_t kAddressSpace = uint64_t{768} << 20;
  ASSERT_NO_FATAL_FAILURE(WriteIndex(
      Env::Posix(), root, OneChunk(kElements, 2 * kElements, ZerosChecksum(2 * kElements))));
  ASSERT_NO_FATAL_FAILURE(MakeSparseFile(
      JoinPath(JoinPath(root, IterationDirName(kIteration)), ShardFileName(0)), 2 * kElements));
  ResourceLimits limits;
  limits.max_read_ratio = uint64_t{1} << 32;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit cap{kAddressSpace, kAddressSpace};
    if (::setrlimit(RLIMIT_AS, &cap) != 0) ::_exit(10);
    VerifyReport report;
    const Status s = VerifyCheckpoint(Env::Posix(), root, false, limits, &report);
    if (!s.ok() || !report.ok() || report.bytes_checked != 2 * kElements) {
      std::fprintf(stderr, "%s\n%s", s.ToString().c_str(), AllFindings(report).c_str());
      ::_exit(11);
    }
    LoadResult result;
    if (!LoadFrom(Env::Posix(), root, SmallPieceOfW(kElements), &result, limits).ok()) ::_exit(12);
    if (result.state.size() != 1 ||
        result.state[0].tensors[0].data != std::vector<uint8_t>(32, 0)) {
      ::_exit(13);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: verify, 12: load, 13: loaded content";
}

// A chunk beyond the loader's staging size is streamed: the part a template asks for is copied
// out of the blocks as they pass, runs straddling block boundaries included, and the whole chunk
// is checksummed. The chunk (2-D, 320 MB) is sparse but for its first 4 MB of random bytes.
TEST(HostileCheckpoint, PieceOfAChunkBeyondTheStagingSizeIsCopiedFromTheStream) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string root = tmp.path();
  constexpr int64_t kRows = 160000, kCols = 1000;  // bf16: 2000 bytes a row, 320 MB
  constexpr uint64_t kBytes = uint64_t{kRows} * kCols * 2;
  std::vector<uint8_t> head(4 << 20);
  uint64_t x = 88172645463325252ULL;
  for (uint8_t& b : head) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  const std::string dir = JoinPath(root, IterationDirName(kIteration));
  ASSERT_TRUE(CreateDirs(Env::Posix(), dir).ok());
  const std::string shard = JoinPath(dir, ShardFileName(0));
  ASSERT_NO_FATAL_FAILURE(MakeSparseFile(shard, kBytes));
  const int fd = ::open(shard.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  ::close(fd);
  std::unique_ptr<RandomAccessFile> file;
  ASSERT_TRUE(Env::Posix()->NewRandomAccessFile(shard, &file).ok());
  std::vector<uint8_t> buffer;
  uint64_t sum = 0;
  ASSERT_TRUE(ChecksumRange(*file, shard, 0, kBytes, &buffer, &sum).ok());
  CheckpointMetadata md = OneChunk(1, kBytes, sum);
  md.tensors[0].global_shape = {kRows, kCols};
  md.tensors[0].chunks[0].box = Box{{0, 0}, {kRows, kCols}};
  md.tensors[0].chunks[0].extent.size = kBytes;
  ASSERT_NO_FATAL_FAILURE(WriteIndex(Env::Posix(), root, md));

  const Box want{{523, 10}, {1100, 980}};  // rows 523-1622 span blocks 0-3 of 1 MiB
  LoadRequest request = SmallPieceOfW(kRows);
  TensorSpec& spec = request.templates[0].tensors[0].spec;
  spec.global_shape = {kRows, kCols};
  spec.global_offset = want.offset;
  spec.local_shape = want.shape;
  request.templates[0].tensors[0].data.assign(static_cast<size_t>(Volume(want.shape)) * 2, 0);
  ResourceLimits limits;
  limits.max_read_ratio = uint64_t{1} << 20;
  LoadResult result;
  ASSERT_TRUE(LoadFrom(Env::Posix(), root, request, &result, limits).ok());
  std::vector<uint8_t> expected;
  for (int64_t r = want.offset[0]; r < want.offset[0] + want.shape[0]; ++r) {
    const uint8_t* row = head.data() + (r * kCols + want.offset[1]) * 2;
    expected.insert(expected.end(), row, row + want.shape[1] * 2);
  }
  EXPECT_TRUE(result.state[0].tensors[0].data == expected);

  // One flipped byte far beyond the piece fails the whole chunk's checksum.
  const int rw = ::open(shard.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(rw, 0);
  const uint8_t one = 1;
  ASSERT_EQ(::pwrite(rw, &one, 1, static_cast<off_t>(kBytes - 1)), 1);
  ::close(rw);
  const Status corrupt = LoadFrom(Env::Posix(), root, request, &result, limits);
  EXPECT_EQ(corrupt.code(), Status::Code::kCorruption) << corrupt.ToString();
}

// --- Row 3: items sharing bytes ------------------------------------------------------------------

// Three tensors whose chunks all point at the same 64 bytes of one file, and an object there too.
TEST(HostileCheckpoint, ItemsSharingBytesAreAFindingAndCorruption) {
  MemEnv env;
  const std::string root = "/ckpt";
  std::string bytes(64, 'x');
  const uint64_t sum = Checksum(bytes.data(), bytes.size());
  CheckpointMetadata md = OneChunk(32, 64, sum);
  for (const char* key : {"a", "b"}) {
    TensorEntry t = md.tensors[0];
    t.key = key;
    md.tensors.push_back(t);
  }
  ObjectEntry o;
  o.key = "rng";
  o.global_shape = {1};
  o.global_offset = {0};
  o.extent = Extent{0, 16, 8, Checksum(bytes.data() + 16, 8)};
  md.objects.push_back(o);
  ASSERT_NO_FATAL_FAILURE(WriteIndex(&env, root, md));
  ASSERT_TRUE(WriteFileSynced(&env, "/ckpt/iter_0000001/" + ShardFileName(0), bytes).ok());

  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&env, root, false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  const std::string expected =
      "/ckpt/iter_0000001/metadata.json: tensor 'w' chunk [0:32] and "
      "tensor 'a' chunk [0:32] share bytes [0, 64) of shard_00000.bin";
  EXPECT_NE(report.findings[0].find(expected), std::string::npos) << report.findings[0];
  EXPECT_EQ(report.bytes_checked, 0u);  // refused before any data is read

  LoadResult result;
  const Status loaded = LoadFrom(&env, root, SmallPieceOfW(32), &result);
  EXPECT_EQ(loaded.code(), Status::Code::kCorruption);
  EXPECT_NE(loaded.message().find(expected), std::string::npos) << loaded.ToString();
}

TEST(HostileCheckpoint, AnObjectInsideAChunkIsNamed) {
  MemEnv env;
  std::string bytes(64, 'x');
  CheckpointMetadata md = OneChunk(32, 64, Checksum(bytes.data(), bytes.size()));
  ObjectEntry o;
  o.key = "rng";
  o.global_shape = {1};
  o.global_offset = {0};
  o.extent = Extent{0, 16, 8, Checksum(bytes.data() + 16, 8)};
  md.objects.push_back(o);
  ASSERT_NO_FATAL_FAILURE(WriteIndex(&env, "/ckpt", md));
  ASSERT_TRUE(WriteFileSynced(&env, "/ckpt/iter_0000001/" + ShardFileName(0), bytes).ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&env, "/ckpt", false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  EXPECT_NE(report.findings[0].find("tensor 'w' chunk [0:32] and object '" + o.UniqueKey() +
                                    "' share bytes [16, 24) of shard_00000.bin"),
            std::string::npos)
      << report.findings[0];
}

// --- Row 4: links leaving the root ---------------------------------------------------------------

// A shard file that is a link to a file outside the checkpoint, with a 1-byte chunk at every
// offset: the link is refused before anything is read or sized, and no message carries a value
// computed from the outside bytes (they once leaked as checksums, byte by byte).
TEST(HostileCheckpoint, ShardLinkedOutsideIsRefusedUnread) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string secret_path = JoinPath(tmp.path(), "secret");
  const std::string secret = "the outside file's bytes";
  ASSERT_TRUE(WriteFileSynced(Env::Posix(), secret_path, secret).ok());
  for (const uint64_t declared : {uint64_t{secret.size()}, uint64_t{secret.size() + 1}}) {
    const std::string root = JoinPath(tmp.path(), "ckpt" + std::to_string(declared));
    CheckpointMetadata md = OneFile(declared);
    for (uint64_t i = 0; i < declared; ++i) {
      ObjectEntry o;
      o.key = "byte" + std::to_string(i);
      o.global_shape = {1};
      o.global_offset = {0};
      o.extent = Extent{0, i, 1, 0};
      md.objects.push_back(o);
    }
    ASSERT_NO_FATAL_FAILURE(WriteIndex(Env::Posix(), root, md));
    const std::string shard =
        JoinPath(JoinPath(root, IterationDirName(kIteration)), ShardFileName(0));
    ASSERT_EQ(::symlink(secret_path.c_str(), shard.c_str()), 0);
    VerifyReport report;
    ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), root, false, &report).ok());
    ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
    // The same finding whether or not the declared size is the outside file's: no size oracle.
    EXPECT_EQ(report.findings[0], JoinPath(root, IterationDirName(kIteration)) +
                                      ": Corruption: " + shard +
                                      " is a symbolic link leaving the checkpoint root; links are "
                                      "not followed");
    EXPECT_EQ(report.bytes_checked, 0u);
    for (char c : secret) {
      EXPECT_EQ(report.findings[0].find(ChecksumHex(Checksum(&c, 1))), std::string::npos);
    }
  }
}

TEST(HostileCheckpoint, IterationDirectoryLinkedOutsideIsRefused) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  // A sound checkpoint outside; the root holds only a tracker and a link to its iteration.
  const std::string outside = JoinPath(tmp.path(), "outside");
  std::string bytes(32, 'y');
  ASSERT_NO_FATAL_FAILURE(
      WriteIndex(Env::Posix(), outside, OneChunk(16, 32, Checksum(bytes.data(), 32))));
  ASSERT_TRUE(
      WriteFileSynced(Env::Posix(), JoinPath(outside, "iter_0000001/" + ShardFileName(0)), bytes)
          .ok());
  const std::string root = JoinPath(tmp.path(), "ckpt");
  ASSERT_TRUE(Env::Posix()->CreateDir(root).ok());
  ASSERT_TRUE(
      WriteFileSynced(Env::Posix(), JoinPath(root, kTrackerFileName), EncodeTracker(kIteration))
          .ok());
  const std::string link = JoinPath(root, IterationDirName(kIteration));
  ASSERT_EQ(::symlink(JoinPath(outside, IterationDirName(kIteration)).c_str(), link.c_str()), 0);

  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), outside, false, &report).ok());
  ASSERT_TRUE(report.ok()) << AllFindings(report);  // the outside checkpoint itself is sound
  ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), root, false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  EXPECT_NE(report.findings[0].find(link + " is a symbolic link leaving the checkpoint root"),
            std::string::npos)
      << report.findings[0];
  LoadResult result;
  const Status loaded = LoadFrom(Env::Posix(), root, SmallPieceOfW(16), &result);
  EXPECT_EQ(loaded.code(), Status::Code::kCorruption) << loaded.ToString();
  EXPECT_NE(loaded.message().find("is a symbolic link leaving the checkpoint root"),
            std::string::npos);
}

TEST(HostileCheckpoint, WriterDirectoryLinkedOutsideIsRefused) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string root = JoinPath(tmp.path(), "ckpt");
  const std::string dir = JoinPath(root, IterationDirName(kIteration));
  ASSERT_TRUE(CreateDirs(Env::Posix(), dir).ok());
  ASSERT_TRUE(
      WriteFileSynced(Env::Posix(), JoinPath(root, kTrackerFileName), EncodeTracker(kIteration))
          .ok());
  const std::string outside = JoinPath(tmp.path(), "elsewhere");
  ASSERT_TRUE(Env::Posix()->CreateDir(outside).ok());
  const std::string link = JoinPath(dir, WriterDirName(0));
  ASSERT_EQ(::symlink(outside.c_str(), link.c_str()), 0);
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), root, false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  EXPECT_NE(report.findings[0].find(link + " is a symbolic link leaving the checkpoint root"),
            std::string::npos)
      << report.findings[0];
}

// Links that stay inside the root are refused too (docs/SECURITY.md: no link is followed).
TEST(HostileCheckpoint, LinkInsideTheRootIsRefusedAndSaysSo) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string root = tmp.path();
  std::string bytes(8, 'z');
  ASSERT_NO_FATAL_FAILURE(
      WriteIndex(Env::Posix(), root, OneChunk(4, 8, Checksum(bytes.data(), 8))));
  const std::string dir = JoinPath(root, IterationDirName(kIteration));
  ASSERT_TRUE(WriteFileSynced(Env::Posix(), JoinPath(dir, "real.bin"), bytes).ok());
  ASSERT_EQ(::symlink("real.bin", JoinPath(dir, ShardFileName(0)).c_str()), 0);
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), root, false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  EXPECT_NE(report.findings[0].find(
                ShardFileName(0) +
                " is a symbolic link inside the checkpoint root; links are not followed"),
            std::string::npos)
      << report.findings[0];
}

// A checksum mismatch names the expected value, the file and the offset; never the digest of
// what was read.
TEST(HostileCheckpoint, ChecksumMismatchPrintsOnlyTheExpectedValue) {
  MemEnv env;
  std::string bytes(32, 'q');
  const uint64_t expected = 0x0123456789abcdefULL;
  ASSERT_NO_FATAL_FAILURE(WriteIndex(&env, "/ckpt", OneChunk(16, 32, expected)));
  ASSERT_TRUE(WriteFileSynced(&env, "/ckpt/iter_0000001/" + ShardFileName(0), bytes).ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&env, "/ckpt", false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
  EXPECT_EQ(report.findings[0],
            "tensor 'w' chunk [0:16]: checksum mismatch in "
            "/ckpt/iter_0000001/shard_00000.bin at offset 0 (32 bytes): "
            "expected 0123456789abcdef");
  LoadResult result;
  const Status loaded = LoadFrom(&env, "/ckpt", SmallPieceOfW(16), &result);
  EXPECT_EQ(loaded.code(), Status::Code::kCorruption);
  EXPECT_EQ(loaded.message().find(ChecksumHex(Checksum(bytes.data(), bytes.size()))),
            std::string::npos)
      << loaded.ToString();
}

// --- Row 7: special files ------------------------------------------------------------------------

TEST(HostileCheckpoint, FifoShardOrIndexIsRefusedWithoutOpening) {
  for (const std::string& name : {ShardFileName(0), std::string(kMetadataFileName)}) {
    TempDir tmp;
    ASSERT_FALSE(tmp.path().empty());
    const std::string root = tmp.path();
    ASSERT_NO_FATAL_FAILURE(WriteIndex(Env::Posix(), root, OneChunk(4, 8, 0)));
    const std::string fifo = JoinPath(JoinPath(root, IterationDirName(kIteration)), name);
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    VerifyReport report;  // an open for reading would block here for ever: no writer comes
    ASSERT_TRUE(VerifyCheckpoint(Env::Posix(), root, false, &report).ok());
    ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
    EXPECT_NE(report.findings[0].find(fifo + " is a FIFO, not a regular file"), std::string::npos)
        << report.findings[0];
  }
}

// --- The limits: each a named error, raised by its flag ------------------------------------------

TEST(HostileCheckpoint, EachLimitIsNamedWithItsFlag) {
  MemEnv env;
  std::string bytes(8, 'k');
  CheckpointMetadata md = OneChunk(4, 8, Checksum(bytes.data(), 8));
  md.common = nlohmann::json::parse(R"({"a": {"b": {"c": 1}}})");
  ASSERT_NO_FATAL_FAILURE(WriteIndex(&env, "/ckpt", md));
  ASSERT_TRUE(WriteFileSynced(&env, "/ckpt/iter_0000001/" + ShardFileName(0), bytes).ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&env, "/ckpt", false, &report).ok());
  ASSERT_TRUE(report.ok()) << AllFindings(report);
  struct Case {
    uint64_t ResourceLimits::*field;
    uint64_t value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {&ResourceLimits::max_chunks, 0,
       "1 chunks and objects exceed max_chunks = 0 (--max-chunks raises it)"},
      {&ResourceLimits::max_metadata_bytes, 100,
       "bytes exceed max_metadata_bytes = 100 (--max-metadata-bytes raises it)"},
      {&ResourceLimits::max_json_depth, 2, "nests deeper than 2 levels"},
  };
  for (const Case& c : cases) {
    ResourceLimits limits;
    limits.*c.field = c.value;
    ASSERT_TRUE(VerifyCheckpoint(&env, "/ckpt", false, limits, &report).ok());
    ASSERT_EQ(report.findings.size(), 1u) << AllFindings(report);
    EXPECT_NE(report.findings[0].find(c.expected), std::string::npos) << report.findings[0];
  }
}

}  // namespace
}  // namespace ckptspec
