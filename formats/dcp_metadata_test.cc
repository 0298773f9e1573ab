#include "formats/dcp_metadata.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/dcp_test_writer.h"

namespace ckptspec {
namespace {

using dcp_test::Chunk;
using dcp_test::Index;
using dcp_test::Tensor;

// A tensor 'w' of size (8, 8) in two row halves, each with its storage entry.
Index TwoHalves() {
  Index index;
  index.tensors.push_back({"w", "float32", {8, 8}, {Chunk{{0, 0}, {4, 8}}, Chunk{{4, 0}, {4, 8}}}});
  index.storage.push_back({"w", std::vector<int64_t>{0, 0}, "__0_0.distcp", 0, 100});
  index.storage.push_back({"w", std::vector<int64_t>{4, 0}, "__1_0.distcp", 0, 100});
  return index;
}

Status Read(const Index& index) {
  DcpMetadata md;
  return md.Read(dcp_test::EncodeMetadata(index));
}

TEST(DcpMetadata, ReadsWhatTheTestWriterWrites) {
  DcpMetadata md;
  ASSERT_TRUE(md.Read(dcp_test::EncodeMetadata(TwoHalves())).ok());
  ASSERT_EQ(md.tensors().size(), 1u);
  EXPECT_EQ(md.tensors()[0].fqn, "w");
  EXPECT_EQ(md.Shape(md.tensors()[0].size), (Dims{8, 8}));
  EXPECT_EQ(md.doc().Len(md.tensors()[0].chunks), 2u);
  EXPECT_EQ(md.storage_count(), 2u);
  EXPECT_EQ(md.storage(1).relative_path, "__1_0.distcp");
}

// Each way a chunk's geometry can disagree with its tensor is refused where the index is read,
// with the tensor, the chunk and the axis named: nothing downstream may index by it.
TEST(DcpMetadata, ChunkGeometryIsCheckedWhereTheIndexIsRead) {
  struct Case {
    const char* what;
    Chunk chunk;  // replaces chunk 1 of TwoHalves
    std::vector<int64_t> size;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"offsets with fewer axes",
       Chunk{{4}, {4, 8}},
       {8, 8},
       "state_dict_metadata['w'].chunks[1]: offsets (4,) and sizes (4, 8) have 1 and 2 axes; the "
       "tensor's size (8, 8) has 2"},
      {"sizes with fewer axes",
       Chunk{{4, 0}, {4}},
       {8, 8},
       "state_dict_metadata['w'].chunks[1]: offsets (4, 0) and sizes (4,) have 2 and 1 axes; the "
       "tensor's size (8, 8) has 2"},
      {"nine axes on a 2-axis tensor",
       Chunk{{4, 0, 0, 0, 0, 0, 0, 0, 0}, {4, 8, 1, 1, 1, 1, 1, 1, 1}},
       {8, 8},
       "have 9 and 9 axes; the tensor's size (8, 8) has 2"},
      {"past the end",
       Chunk{{4, 6}, {4, 8}},
       {8, 8},
       "offsets (4, 6) and sizes (4, 8) reach past the tensor's size (8, 8) on axis 1"},
      {"size past the end",
       Chunk{{4, 0}, {5, 8}},
       {8, 8},
       "reach past the tensor's size (8, 8) on axis 0"},
      {"negative offset", Chunk{{-4, 0}, {4, 8}}, {8, 8}, "axis 0 is negative"},
      {"negative size", Chunk{{4, 0}, {4, -8}}, {8, 8}, "axis 1 is negative"},
      {"offset beyond int64 when added",
       Chunk{{4, INT64_MAX}, {4, 8}},
       {8, 8},
       "reach past the tensor's size (8, 8) on axis 1"},
  };
  for (const Case& c : cases) {
    Index index = TwoHalves();
    index.tensors[0].chunks[1] = c.chunk;
    index.tensors[0].size = c.size;
    const Status s = Read(index);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s.message();
  }
}

TEST(DcpMetadata, TensorSizesAreCheckedToo) {
  Index index = TwoHalves();
  index.tensors[0].size.assign(600, 1);
  index.tensors[0].chunks.clear();
  Status s = Read(index);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("state_dict_metadata['w'].size: 600 axes; ckptspec reads tensors "
                             "of at most 64"),
            std::string::npos)
      << s.message();
  index.tensors[0].size = {8, -1};
  s = Read(index);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("size: (8, -1): axis 1 is negative"), std::string::npos)
      << s.message();
  index.tensors[0].size = {int64_t{1} << 40, int64_t{1} << 40};
  s = Read(index);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("more elements than int64 counts"), std::string::npos) << s.message();
  // 64 axes are read; an empty tensor needs no chunk.
  index.tensors[0].size.assign(64, 1);
  index.tensors[0].chunks = {Chunk{std::vector<int64_t>(64, 0), std::vector<int64_t>(64, 1)}};
  EXPECT_TRUE(Read(index).ok());
}

}  // namespace
}  // namespace ckptspec
