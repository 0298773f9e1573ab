// Hostile PyTorch DCP checkpoints through `verify` and `diff` (docs/SECURITY.md): chunk geometry
// is refused where the index is read and never trusted downstream; diff refuses what verify
// refuses, before reading data; a long name on many chunks costs about the index, not the name
// times the chunks.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/dcp_test_writer.h"
#include "model/address_limit_test_util.h"
#include "ondisk/checkpoint_contents.h"
#include "ondisk/checkpoint_diff.h"
#include "ondisk/dcp_verify.h"
#include "ondisk/fixture_test_util.h"

namespace ckptspec {
namespace {

namespace fs = std::filesystem;
using dcp_test::Chunk;
using dcp_test::Index;
using dcp_test::Tensor;
using testing_util::Fixture;
using testing_util::VerifyDcp;
using testing_util::ViewOf;

// A temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "ckptspec_hostile_dcp_XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ignored;  // best effort: a leftover temporary directory harms nothing
    fs::remove_all(path_, ignored);
  }
  std::string Sub(const std::string& name) const {
    fs::create_directories(path_ + "/" + name);
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The value of element `global` (row-major index in the tensor): the same whatever the layout.
float ValueAt(uint64_t global) { return static_cast<float>(global % 1000) * 0.5f - 7.0f; }

// Whether the chunk has the tensor's axes and lies inside it.
bool GeometryValid(const Chunk& c, const std::vector<int64_t>& size) {
  if (c.offsets.size() != size.size() || c.sizes.size() != size.size()) return false;
  for (size_t a = 0; a < size.size(); ++a) {
    if (c.offsets[a] < 0 || c.sizes[a] < 0 || c.offsets[a] > size[a] ||
        c.sizes[a] > size[a] - c.offsets[a]) {
      return false;
    }
  }
  return true;
}

// Writes `tensors` as a DCP checkpoint into `dir`: chunk c of each tensor as a real float32 item
// in __{c % 2}_0.distcp holding ValueAt of its elements; a chunk whose geometry is invalid gets
// 16 bytes of junk instead (its index is refused before any item is read).
void WriteDcp(const std::string& dir, const std::vector<Tensor>& tensors) {
  Index index;
  index.tensors = tensors;
  std::map<std::string, std::string> files;
  for (const Tensor& t : tensors) {
    for (size_t c = 0; c < t.chunks.size(); ++c) {
      const Chunk& chunk = t.chunks[c];
      std::string item(16, 'x');
      if (GeometryValid(chunk, t.size)) {
        std::string data;
        Dims local(chunk.sizes.size(), 0);
        int64_t volume = 1;
        for (int64_t n : chunk.sizes) volume *= n;
        for (int64_t i = 0; i < volume; ++i) {
          uint64_t global = 0;
          for (size_t a = 0; a < local.size(); ++a) {
            global = global * static_cast<uint64_t>(t.size[a]) +
                     static_cast<uint64_t>(chunk.offsets[a] + local[a]);
          }
          const float v = ValueAt(global);
          data.append(reinterpret_cast<const char*>(&v), sizeof v);
          for (size_t a = local.size(); a-- > 0;) {
            if (++local[a] < chunk.sizes[a]) break;
            local[a] = 0;
          }
        }
        item = dcp_test::EncodeFloatTensorItem(chunk.sizes, data);
      }
      const std::string file = "__" + std::to_string(c % 2) + "_0.distcp";
      std::string& content = files[file];
      index.storage.push_back({t.fqn, chunk.offsets, file, static_cast<int64_t>(content.size()),
                               static_cast<int64_t>(item.size())});
      content += item;
    }
  }
  for (const auto& [name, content] : files) WriteFile(dir + "/" + name, content);
  WriteFile(dir + "/.metadata", dcp_test::EncodeMetadata(index));
}

struct Opened {
  std::unique_ptr<Env> view;
  std::unique_ptr<CheckpointContents> contents;
};

Status Open(const std::string& dir, Opened* out) {
  out->view = ViewOf(dir);
  return CheckpointContents::Open(out->view.get(), dir, ResourceLimits(), &out->contents);
}

std::string Text(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

std::string Text(const std::vector<Chunk>& chunks) {
  std::string text;
  for (const Chunk& c : chunks) {
    text += (text.empty() ? "" : " ") + Text(c.offsets) + "+" + Text(c.sizes);
  }
  return text;
}

// A tiling of `size` on a grid: each axis cut once at a random point, or not at all.
std::vector<Chunk> GridTiling(const std::vector<int64_t>& size) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> parts(size.size());  // (offset, length)
  for (size_t a = 0; a < size.size(); ++a) {
    const int64_t cut = *rc::gen::inRange<int64_t>(0, size[a] + 1);
    if (cut > 0 && cut < size[a]) {
      parts[a] = {{0, cut}, {cut, size[a] - cut}};
    } else {
      parts[a] = {{0, size[a]}};
    }
  }
  std::vector<Chunk> chunks(1);
  for (size_t a = 0; a < size.size(); ++a) {
    std::vector<Chunk> next;
    for (const Chunk& c : chunks) {
      for (const auto& [offset, length] : parts[a]) {
        Chunk d = c;
        d.offsets.push_back(offset);
        d.sizes.push_back(length);
        next.push_back(d);
      }
    }
    chunks = next;
  }
  return chunks;
}

enum class Damage { kNone, kDropAxis, kExtraAxes, kPastEnd, kNegative, kOverlap, kGap, kShift };
const char* DamageName(Damage d) {
  static const char* const kNames[] = {"none",     "drop an axis", "extra axes", "past the end",
                                       "negative", "overlap",      "gap",        "shift"};
  return kNames[static_cast<int>(d)];
}

// Random layouts of one tensor of 0 to 10 axes (beyond the device checks' 8), saved as A under one
// tiling and as B under another; A's chunks possibly damaged. verify and diff never crash; a
// damaged geometry is refused by both where the index is read; an overlap or a gap is a finding
// of verify that diff refuses to compare; a sound A diffs equal to B.
RC_GTEST_PROP(HostileDcp, ChunkGeometryIsRefusedWhereReadAndNeverTrustedDownstream, ()) {
  const size_t rank = *rc::gen::inRange<size_t>(0, 11);
  std::vector<int64_t> size;
  for (size_t a = 0; a < rank; ++a) size.push_back(*rc::gen::inRange<int64_t>(1, rank > 4 ? 3 : 6));
  std::vector<Chunk> a_chunks = GridTiling(size);
  const std::vector<Chunk> b_chunks = GridTiling(size);
  Damage damage =
      *rc::gen::element(Damage::kNone, Damage::kDropAxis, Damage::kExtraAxes, Damage::kPastEnd,
                        Damage::kNegative, Damage::kOverlap, Damage::kGap, Damage::kShift);
  if (rank == 0 && damage != Damage::kExtraAxes && damage != Damage::kOverlap &&
      damage != Damage::kGap) {
    damage = Damage::kNone;  // a scalar has no axis to drop, move or negate
  }
  const size_t victim = *rc::gen::inRange<size_t>(0, a_chunks.size());
  Chunk& v = a_chunks[victim];
  const size_t axis = rank == 0 ? 0 : *rc::gen::inRange<size_t>(0, rank);
  const bool on_offsets = *rc::gen::arbitrary<bool>();
  std::vector<int64_t>& dims = on_offsets ? v.offsets : v.sizes;
  switch (damage) {
    case Damage::kNone:
      break;
    case Damage::kDropAxis:
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
      break;
    case Damage::kExtraAxes: {  // past 8 axes as well: the device checks' fixed arrays
      const size_t extra = *rc::gen::element<size_t>(1, 2, 9, 24, 70);
      dims.insert(dims.end(), extra, 0);
      if (*rc::gen::arbitrary<bool>()) {
        (on_offsets ? v.sizes : v.offsets)
            .insert((on_offsets ? v.sizes : v.offsets).end(), extra, on_offsets ? 1 : 0);
      }
      break;
    }
    case Damage::kPastEnd: {  // the chunk's end beyond the tensor's extent on `axis`
      const int64_t beyond = *rc::gen::inRange<int64_t>(1, 4);
      if (on_offsets) {
        v.offsets[axis] = size[axis] - v.sizes[axis] + beyond;
      } else {
        v.sizes[axis] = size[axis] - v.offsets[axis] + beyond;
      }
      break;
    }
    case Damage::kNegative:
      dims[axis] = -*rc::gen::inRange<int64_t>(1, 4);
      break;
    case Damage::kOverlap:
      a_chunks.push_back(v);
      break;
    case Damage::kGap:
      if (a_chunks.size() == 1) {
        damage = Damage::kNone;  // the only chunk: removing it leaves a tensor with no chunks
      } else {
        a_chunks.erase(a_chunks.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      break;
    case Damage::kShift:  // below: it needs a chunk that does not start at 0
      break;
  }
  if (damage == Damage::kShift) {
    // One chunk moved back by one on an axis where it does not start at 0: it overlaps its
    // neighbour and leaves a gap, and the volumes still add up to the tensor's.
    damage = Damage::kNone;
    for (Chunk& c : a_chunks) {
      for (size_t a = 0; a < c.offsets.size() && damage == Damage::kNone; ++a) {
        if (c.offsets[a] > 0) {
          --c.offsets[a];
          damage = Damage::kShift;
        }
      }
      if (damage == Damage::kShift) break;
    }
  }
  // Listed in any order: the checks may not rely on the order the writer used.
  std::rotate(a_chunks.begin(),
              a_chunks.begin() + *rc::gen::inRange<std::ptrdiff_t>(
                                     0, static_cast<std::ptrdiff_t>(a_chunks.size())),
              a_chunks.end());
  if (*rc::gen::arbitrary<bool>()) std::reverse(a_chunks.begin(), a_chunks.end());
  RC_TAG(DamageName(damage));
  RC_LOG() << "tensor 'w' of size " << Text(size) << "; A's chunks (" << DamageName(damage)
           << "): " << Text(a_chunks) << "; B's: " << Text(b_chunks) << "\n";
  const bool geometry_valid = damage == Damage::kNone || damage == Damage::kOverlap ||
                              damage == Damage::kGap || damage == Damage::kShift;

  TempDir tmp;
  const std::string a_dir = tmp.Sub("a"), b_dir = tmp.Sub("b");
  WriteDcp(a_dir, {Tensor{"w", "float32", size, a_chunks}});
  WriteDcp(b_dir, {Tensor{"w", "float32", size, b_chunks}});
  DcpVerifyReport report;
  const Status verified = VerifyDcp(a_dir, &report);
  Opened a, b;
  const Status opened = Open(a_dir, &a);
  RC_ASSERT(Open(b_dir, &b).ok());
  if (!geometry_valid) {
    RC_ASSERT(!verified.ok());
    RC_ASSERT(verified.message().find("state_dict_metadata['w'].chunks[") != std::string::npos);
    RC_ASSERT(!opened.ok());
    RC_ASSERT(opened.message().find(verified.message()) != std::string::npos);
    return;
  }
  RC_ASSERT(verified.ok());
  if (damage == Damage::kNone) {
    RC_ASSERT(report.ok());
    RC_ASSERT(opened.ok());
    DiffReport diff;
    RC_ASSERT(DiffCheckpoints(*a.contents, *b.contents, DiffOptions(), &diff).ok());
    RC_ASSERT(diff.same());
    return;
  }
  // An overlap or a gap (or both): verify's finding, and diff's refusal naming it.
  RC_ASSERT(!report.index.ok());
  RC_ASSERT(!opened.ok());
  RC_ASSERT(opened.message().find(report.index.findings.front()) != std::string::npos);
}

// Every fixture verify finds inconsistent (corpus/dcp/MANIFEST.json says what each carries:
// overlapping chunks, a hole, entries sharing bytes, a missing file...) is refused by diff before
// it reads any data, with verify's first finding named.
TEST(HostileDcp, DiffRefusesWhatVerifyFindsInTheIndex) {
  int refused = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(Fixture(""))) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("corrupt_", 0) != 0) continue;
    DcpVerifyReport report;
    const Status verified = VerifyDcp(entry.path().string(), &report, /*data=*/false);
    Opened opened;
    const Status s = Open(entry.path().string(), &opened);
    if (!verified.ok()) {
      EXPECT_FALSE(s.ok()) << name;
      continue;
    }
    if (report.index.ok()) continue;  // a defect only a read of the data shows
    ++refused;
    ASSERT_FALSE(s.ok()) << name << ": diff opened what verify finds inconsistent";
    EXPECT_NE(s.message().find(report.index.findings.front()), std::string::npos)
        << name << ": " << s.message();
  }
  EXPECT_GE(refused, 4);  // corrupt_overlap, corrupt_hole, corrupt_storage_overlap, ...
}

// A chunk whose entry declares 6 GiB of a sparse file: both verify --data and diff refuse it by
// the read ratio before reading a byte of it.
TEST(HostileDcp, ASparseItemIsRefusedBeforeItIsRead) {
  TempDir tmp;
  const std::string dir = tmp.Sub("sparse");
  const int64_t six_gib = int64_t{6} << 30;
  Index index;
  index.tensors.push_back({"w", "float32", {six_gib / 4}, {Chunk{{0}, {six_gib / 4}}}});
  index.storage.push_back({"w", std::vector<int64_t>{0}, "__0_0.distcp", 0, six_gib});
  WriteFile(dir + "/.metadata", dcp_test::EncodeMetadata(index));
  WriteFile(dir + "/__0_0.distcp", "");
  fs::resize_file(dir + "/__0_0.distcp", static_cast<uintmax_t>(six_gib));
  DcpVerifyReport report;
  ASSERT_TRUE(VerifyDcp(dir, &report).ok());
  ASSERT_EQ(report.data_findings.size(), 1u);
  EXPECT_NE(report.data_findings[0].find("6442450944 bytes to read exceed max_read_ratio = 16 "
                                         "(--max-read-ratio raises it)"),
            std::string::npos)
      << report.data_findings[0];
  EXPECT_EQ(report.bytes_read, 0u);
  Opened opened;
  const Status s = Open(dir, &opened);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("6442450944 bytes to read exceed max_read_ratio = 16"),
            std::string::npos)
      << s.message();
}

// A 64 KiB tensor name on 50,000 overlapping chunks with no storage entries (a 6 MB index): verify
// lists its capped findings within 384 MiB of address space more than the test already maps. The
// name is held once: copying it per chunk (3.2 GB) or building a message per finding beyond the
// listed ones would not fit.
TEST(HostileDcp, ALongNameOnManyChunksCostsAboutTheIndex) {
#ifdef CKPTSPEC_NO_ADDRESS_LIMIT
  GTEST_SKIP() << testing_util::kNoAddressLimitReason;
#endif
  TempDir tmp;
  const std::string dir = tmp.Sub("long_name");
  const int64_t chunks = 50000;
  Tensor t{std::string(64 << 10, 'n'), "float32", {chunks + 1}, {}};
  for (int64_t c = 0; c < chunks; ++c) t.chunks.push_back(Chunk{{c}, {2}});
  Index index;
  index.tensors.push_back(t);
  const std::string bytes = dcp_test::EncodeMetadata(index);
  ASSERT_LT(bytes.size(), 8u << 20);
  WriteFile(dir + "/.metadata", bytes);
  const uint64_t cap = testing_util::MappedAddressSpace() + (uint64_t{384} << 20);
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit limit{cap, cap};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
    DcpVerifyReport report;
    if (!VerifyDcp(dir, &report, /*data=*/false).ok()) _exit(11);
    // 50 tiling findings listed and one line counting the rest; likewise for storage.
    size_t tiling = 0, storage = 0;
    for (const std::string& f : report.index.findings) {
      tiling += f.rfind("tiling: ", 0) == 0;
      storage += f.rfind("storage: ", 0) == 0;
    }
    _exit(tiling >= 2 && storage == kMaxFindingsPerCheck + 1 ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "verify died of signal " << WTERMSIG(status) << " under a "
                                 << (cap >> 20) << " MiB address-space limit";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Chunks listed in any order: [0:3], [5:10], [1:3] of a tensor of 10 add up to its volume, and
// only a sweep over them sorted by offset sees that [1:3] overlaps [0:3] and [3:5] is a gap.
TEST(HostileDcp, ChunksOutOfOrderStillOverlapAndLeaveGaps) {
  TempDir tmp;
  const std::string dir = tmp.Sub("unordered");
  WriteDcp(dir,
           {Tensor{"w", "float32", {10}, {Chunk{{0}, {3}}, Chunk{{5}, {5}}, Chunk{{1}, {2}}}}});
  DcpVerifyReport report;
  ASSERT_TRUE(VerifyDcp(dir, &report).ok());
  std::string findings;
  for (const std::string& f : report.index.findings) findings += f + "\n";
  EXPECT_NE(findings.find("tiling: P4 overlap"), std::string::npos) << findings;
  EXPECT_NE(findings.find("tiling: P4 gap"), std::string::npos) << findings;
}

// diff reads A's chunks once and B's again only when its cache dropped them; what it reads in all
// is bounded by max_read_ratio times what both checkpoints occupy on disk. Rows against columns
// with a cache of one byte re-read every B chunk for every A chunk: refused by the limit, named.
TEST(HostileDcp, DiffReadsAreBoundedByTheReadRatio) {
  TempDir tmp;
  const std::string a_dir = tmp.Sub("rows"), b_dir = tmp.Sub("columns");
  Tensor rows{"w", "float32", {16, 16}, {}}, columns = rows;
  for (int64_t i = 0; i < 16; ++i) {
    rows.chunks.push_back(Chunk{{i, 0}, {1, 16}});
    columns.chunks.push_back(Chunk{{0, i}, {16, 1}});
  }
  WriteDcp(a_dir, {rows});
  WriteDcp(b_dir, {columns});
  Opened a, b;
  ASSERT_TRUE(Open(a_dir, &a).ok());
  ASSERT_TRUE(Open(b_dir, &b).ok());
  DiffOptions options;
  options.limits.max_read_ratio = 1;
  DiffReport report;
  ASSERT_TRUE(DiffCheckpoints(*a.contents, *b.contents, options, &report).ok());
  EXPECT_TRUE(report.same());
  options.cache_bytes = 1;
  const Status s = DiffCheckpoints(*a.contents, *b.contents, options, &report);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bytes read exceed max_read_ratio = 1 (--max-read-ratio raises it)"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ckptspec
