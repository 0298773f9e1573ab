#include "cli/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ckptspec {
namespace {

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ckptspec_output_file_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string Contents(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_;
};

TEST_F(OutputFileTest, WritesTheReportAndKeepsAnEarlierOneUntilThen) {
  const std::string path = dir_ + "/report.json";
  std::ofstream(path) << "an earlier, longer report";
  OutputFile file;
  ASSERT_TRUE(file.Open("--json", path).ok());
  EXPECT_EQ(Contents(path), "an earlier, longer report");
  ASSERT_TRUE(file.WriteAndClose("{}\n").ok());
  EXPECT_EQ(Contents(path), "{}\n");
  EXPECT_FALSE(file.is_open());
  OutputFile unused;
  EXPECT_TRUE(unused.WriteAndClose("nothing").ok()) << "a flag not given writes nothing";
}

TEST_F(OutputFileTest, APathThatCannotBeOpenedIsNamedAtOnce) {
  OutputFile file;
  Status s = file.Open("--json", "/nonexistent/dir/x.json");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--json '/nonexistent/dir/x.json': cannot open for writing: No such file or directory");
  s = file.Open("--junit", dir_);
  EXPECT_EQ(s.message(), "--junit '" + dir_ + "': cannot open for writing: Is a directory");
  // A FIFO nobody reads would block the open forever: it is refused at once.
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  alarm(60);
  s = file.Open("--junit", fifo);
  alarm(0);
  EXPECT_EQ(s.message(),
            "--junit '" + fifo +
                "': cannot open for writing (a FIFO without a reader?): No such device or address");
}

// A full disk: the write fails, and the error names the flag, the path and the reason.
TEST_F(OutputFileTest, AFullDiskIsAWriteError) {
  OutputFile file;
  ASSERT_TRUE(file.Open("--junit", "/dev/full").ok());
  const Status s = file.WriteAndClose("<testsuite/>\n");
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_EQ(s.message(), "--junit '/dev/full': cannot write: No space left on device");
}

}  // namespace
}  // namespace ckptspec
