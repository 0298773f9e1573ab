#include "cli/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace ckptspec {
namespace {

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ckptspec_input_file_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(InputFileTest, ARegularFileIsReadWhole) {
  const std::string path = dir_ + "/expectations.json";
  std::ofstream(path) << "{\"format\": 1}";
  std::string text;
  ASSERT_TRUE(ReadRegularFile("--expectations", path, 100, &text).ok());
  EXPECT_EQ(text, "{\"format\": 1}");
  EXPECT_TRUE(CheckRegularFile("--plugin", path).ok());
  const Status s = ReadRegularFile("--expectations", path, 5, &text);
  EXPECT_EQ(s.message(), "--expectations '" + path + "': 13 bytes; at most 5 are accepted");
}

// A FIFO would block the open until a writer came (forever); it is refused without being opened.
TEST_F(InputFileTest, FifosDevicesAndDirectoriesAreRefusedByKind) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  alarm(60);  // a blocking open would hang: end the test instead
  std::string text;
  EXPECT_EQ(ReadRegularFile("--expectations", fifo, 100, &text).message(),
            "--expectations '" + fifo + "': a FIFO, not a regular file");
  EXPECT_EQ(CheckRegularFile("--plugin", fifo).message(),
            "--plugin '" + fifo + "': a FIFO, not a regular file");
  alarm(0);
  EXPECT_EQ(ReadRegularFile("--expectations", "/dev/zero", 100, &text).message(),
            "--expectations '/dev/zero': a character device, not a regular file");
  EXPECT_EQ(CheckRegularFile("--plugin", dir_).message(),
            "--plugin '" + dir_ + "': a directory, not a regular file");
  EXPECT_EQ(CheckRegularFile("--plugin", dir_ + "/missing.so").message(),
            "--plugin '" + dir_ + "/missing.so': cannot read: No such file or directory");
}

}  // namespace
}  // namespace ckptspec
