// An adapter's side of the scratch files: whole files, and (revision 4) ranges of a packed file.
#include "targets/process/scratch_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "base/env.h"

namespace ckptspec {
namespace {

class ScratchFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-scratch-file-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)Env::Posix()->RemoveTree(dir_); }
  std::string Path(const char* name) const { return JoinPath(dir_, name); }

  std::string dir_;
};

TEST_F(ScratchFileTest, TheReaderSlicesAPackedFileReadOnce) {
  ASSERT_TRUE(WriteScratchFile(Path("r0.save"), "aaaabbbbbbcc", 12).ok());
  ASSERT_TRUE(WriteScratchFile(Path("r0.t9"), "whole", 5).ok());
  EntryReader reader(1 << 20);
  std::string out;
  ASSERT_TRUE(reader.Read(Path("r0.save"), FileRange{4, 6}, &out).ok());
  EXPECT_EQ(out, "bbbbbb");
  ASSERT_EQ(unlink(Path("r0.save").c_str()), 0);  // kept from the first read
  ASSERT_TRUE(reader.Read(Path("r0.save"), FileRange{10, 2}, &out).ok());
  EXPECT_EQ(out, "cc");
  ASSERT_TRUE(reader.Read(Path("r0.save"), FileRange{12, 0}, &out).ok());
  EXPECT_EQ(out, "");
  ASSERT_TRUE(reader.Read(Path("r0.t9"), std::nullopt, &out).ok());  // a file of its own
  EXPECT_EQ(out, "whole");

  const Status beyond = reader.Read(Path("r0.save"), FileRange{10, 3}, &out);
  EXPECT_EQ(beyond.code(), Status::Code::kInvalidArgument) << beyond.ToString();
  EXPECT_NE(beyond.message().find("bytes [10, 13) asked of a file of 12 bytes"), std::string::npos)
      << beyond.ToString();
  EXPECT_EQ(reader.Read(Path("r1.save"), FileRange{0, 1}, &out).code(), Status::Code::kNotFound);
  EntryReader small(4);
  EXPECT_EQ(small.Read(Path("r0.t9"), FileRange{0, 1}, &out).code(), Status::Code::kCorruption);
}

TEST_F(ScratchFileTest, TheWriterLaysOutRangesAndWritesThePackedFileOnce) {
  EntryWriter writer(1 << 20);
  ASSERT_TRUE(writer.Write(Path("r0.load"), FileRange{4, 2}, "cd", 2).ok());
  ASSERT_TRUE(writer.Write(Path("r0.load"), FileRange{0, 2}, "ab", 2).ok());
  ASSERT_TRUE(writer.Write(Path("r0.o0"), std::nullopt, "object", 6).ok());  // at once
  std::string out;
  ASSERT_TRUE(ReadScratchFile(Path("r0.o0"), 100, &out).ok());
  EXPECT_EQ(out, "object");
  EXPECT_EQ(ReadScratchFile(Path("r0.load"), 100, &out).code(), Status::Code::kNotFound);
  const Status second = writer.Write(Path("r1.load"), FileRange{0, 1}, "x", 1);
  EXPECT_EQ(second.code(), Status::Code::kInvalidArgument) << second.ToString();
  ASSERT_TRUE(writer.Finish().ok());
  ASSERT_TRUE(ReadScratchFile(Path("r0.load"), 100, &out).ok());
  EXPECT_EQ(out, std::string("ab\0\0cd", 6));  // the range nobody wrote reads zeros

  EntryWriter bounded(8);
  EXPECT_EQ(bounded.Write(Path("r2.load"), FileRange{6, 3}, "xyz", 3).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(bounded.Write(Path("r2.load"), FileRange{UINT64_MAX, 1}, "x", 1).code(),
            Status::Code::kInvalidArgument);
  ASSERT_TRUE(bounded.Finish().ok());  // nothing was laid out: no file
  EXPECT_EQ(ReadScratchFile(Path("r2.load"), 100, &out).code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace ckptspec
