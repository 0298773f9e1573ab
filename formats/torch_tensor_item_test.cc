#include "formats/torch_tensor_item.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "formats/zip_test_writer.h"

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source tree (set by formats/CMakeLists.txt)"
#endif

namespace ckptspec {
namespace {

// data.pkl of torch.save(torch.arange(16, dtype=torch.float32)) by torch 2.14.1
// (tools/write_zip_seeds.py): _rebuild_tensor_v2 of ('storage', torch.FloatStorage, '0', 'cpu',
// 16), storage_offset 0 (its argument at byte 100), size (16,) (byte 102), stride (1,) (byte 107).
std::string RealPickle() {
  std::ifstream f(std::string(CKPTSPEC_SOURCE_DIR) +
                      "/corpus/pickle_fuzzer_seed_corpus/fp32_tensor.pt_data_pkl",
                  std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

Status ReadItem(const std::string& pickle, const std::string& storage, TorchTensorItem* item,
                bool with_storage = true) {
  std::vector<zip_test::Entry> entries = {{"archive/data.pkl", pickle}};
  if (with_storage) entries.push_back({"archive/data/0", storage});
  const std::string archive = zip_test::WriteTestZip(entries);
  const MemoryByteSource source(archive, "item");
  return ReadTorchTensorItem(source, ZipLimits(), item);
}

TEST(TorchTensorItem, ReadsWhereTheElementsOfARealItemLie) {
  const std::string pickle = RealPickle();
  ASSERT_EQ(pickle.substr(53, 20), "ctorch\nFloatStorage\n");
  TorchTensorItem item;
  ASSERT_TRUE(ReadItem(pickle, std::string(64, 'x'), &item).ok());
  EXPECT_EQ(std::string(item.dtype->name), "float32");
  EXPECT_EQ(item.shape, Dims{16});
  EXPECT_EQ(item.stride, Dims{1});
  EXPECT_EQ(item.data_offset, item.storage.data_offset);
  EXPECT_EQ(item.data_bytes, 64u);
}

TEST(TorchTensorItem, EachInconsistencyIsNamed) {
  const std::string real = RealPickle();
  struct Case {
    const char* what;
    std::string pickle;
    std::string storage;
    bool with_storage;
    const char* message;
  };
  auto edited = [&](size_t at, char byte) {
    std::string p = real;
    p[at] = byte;
    return p;
  };
  std::string int16 = real;
  int16.replace(60, 12, "ShortStorage");
  const std::vector<Case> cases = {
      {"storage entry short", real, std::string(60, 'x'), true,
       "'archive/data/0' holds 60 bytes; its storage declares 64"},
      {"storage entry missing", real, "", false, "the storage's entry 'archive/data/0' is missing"},
      {"strided", edited(107, 2), std::string(64, 'x'), true,
       "strides (2,) of size (16,) are not row-major contiguous"},
      {"offset past the storage", edited(100, 1), std::string(64, 'x'), true,
       "elements [1, +16) lie outside the storage of 16 elements"},
      {"another storage class", int16, std::string(64, 'x'), true,
       "'archive/data/0' holds 64 bytes; its storage declares 32"},
      {"not a tensor", std::string("\x80\x02N.", 4), std::string(64, 'x'), true,
       "data.pkl: holds a None, not one tensor"},
  };
  for (const Case& c : cases) {
    TorchTensorItem item;
    const Status s = ReadItem(c.pickle, c.storage, &item, c.with_storage);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s.ToString();
    EXPECT_EQ(s.message().rfind("item: ", 0), 0u) << c.what << ": " << s.ToString();
  }
}

}  // namespace
}  // namespace ckptspec
