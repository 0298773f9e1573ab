#include "cli/expectations_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace ckptspec {
namespace {

class ExpectationsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ckptspec_expectations_file_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  // Writes an expectations file listing `properties` (JSON members), extending `extends`.
  std::string Write(const std::string& name, const std::string& properties,
                    const std::string& extends = "") {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << R"({"format": "ckptspec.expectations", "version": 1, )"
                        << (extends.empty() ? "" : "\"extends\": \"" + extends + "\", ")
                        << R"("properties": {)" << properties << "}}";
    return path;
  }
  std::string dir_;
};

TEST_F(ExpectationsFileTest, AFileThatExtendsReadsItsBaseBesideIt) {
  Write("megatron_core.json", R"("P13": {"expect": "n/a", "reason": "real disk"},
                                 "P7": {"expect": "fail", "reason": "cached plan"})");
  const std::string row =
      Write("row.json", R"("P15": {"expect": "fail", "reason": "strides"})", "megatron_core.json");
  Expectations x;
  const Status s = ReadExpectationsFile(row, &x);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(x.source, row);
  EXPECT_EQ(x.For("P7").reason, "cached plan");
  EXPECT_EQ(x.For("P13").expected, Expected::kNotApplicable);
  EXPECT_EQ(x.For("P15").reason, "strides");
  EXPECT_EQ(x.For("P1").expected, Expected::kPass);
}

TEST_F(ExpectationsFileTest, ABaseThatIsMissingNotRegularOrExtendingIsNamed) {
  Expectations x;
  const std::string missing = Write("missing.json", "", "nowhere.json");
  EXPECT_EQ(ReadExpectationsFile(missing, &x).message(),
            missing + ": extends: --expectations '" + dir_ +
                "/nowhere.json': cannot read: No such file or directory");
  ASSERT_EQ(mkfifo((dir_ + "/fifo.json").c_str(), 0600), 0);
  alarm(60);  // a blocking open would hang: end the test instead
  const std::string fifo = Write("fifo-base.json", "", "fifo.json");
  EXPECT_EQ(
      ReadExpectationsFile(fifo, &x).message(),
      fifo + ": extends: --expectations '" + dir_ + "/fifo.json': a FIFO, not a regular file");
  alarm(0);
  // A chain: its bases' expectations in, the nearer file winning; a cycle and a chain of more
  // than kMaxExpectationsChain files are named.
  Write("root.json",
        R"("P7": {"expect": "fail", "reason": "r"}, "P8": {"expect": "n/a", "reason": "r"})");
  Write("base.json", R"("P8": {"expect": "fail", "reason": "r"})", "root.json");
  const std::string chained = Write("chained.json", "", "base.json");
  ASSERT_TRUE(ReadExpectationsFile(chained, &x).ok());
  EXPECT_EQ(x.properties.at("P7").expected, Expected::kFail);
  EXPECT_EQ(x.properties.at("P8").expected, Expected::kFail);
  Write("loop-a.json", "", "loop-b.json");
  const std::string loop = Write("loop-b.json", "", "loop-a.json");
  EXPECT_EQ(ReadExpectationsFile(loop, &x).message(),
            loop + ": extends: " + dir_ + "/loop-a.json: extends: loop-b.json, which the chain " +
                "of bases has read already");
  Write("c1.json", "", "chained.json");
  Write("c2.json", "", "c1.json");
  Write("c3.json", "", "c2.json");
  ASSERT_TRUE(ReadExpectationsFile(dir_ + "/c3.json", &x).ok());  // six files: the most
  const std::string deep = Write("c4.json", "", "c3.json");
  EXPECT_EQ(ReadExpectationsFile(deep, &x).message(),
            deep + ": extends: " + dir_ + "/c3.json: extends: " + dir_ + "/c2.json: extends: " +
                dir_ + "/c1.json: extends: " + dir_ + "/chained.json: extends: " + dir_ +
                "/base.json: extends: root.json: a " + "chain of more than 6 files");
  const std::string broken = Write("broken.json", R"("P99": {"expect": "pass"})");
  const std::string on_broken = Write("on-broken.json", "", "broken.json");
  EXPECT_EQ(ReadExpectationsFile(on_broken, &x).message(),
            on_broken + ": extends: " + dir_ + "/broken.json: properties.P99: no such property");
}

}  // namespace
}  // namespace ckptspec
