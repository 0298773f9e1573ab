// The plugin loader's own checks (runner/plugin.h): the stamp comparison and the refusals that
// come before a plugin is loaded. Loading real plugins is tested in examples/plugin/.
#include "runner/plugin.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace ckptspec {
namespace {

TEST(PluginStamp, TheExecutableStampNamesEveryField) {
  const std::string stamp = ExecutableBuildStamp();
  for (const char* field : {"ckptspec ", "; headers ", "; compiler ", "; stdlib ", "; c++ ",
                            "; debug-containers ", "; asan "}) {
    EXPECT_NE(stamp.find(field), std::string::npos) << field << " in " << stamp;
  }
  EXPECT_EQ(StampDifferences(stamp, stamp), "");
}

TEST(PluginStamp, DifferencesNameTheFieldAndBothValues) {
  const std::string mine = "ckptspec 0.1.0; c++ 201703L; asan off";
  EXPECT_EQ(StampDifferences("ckptspec 0.1.0; c++ 202002L; asan off", mine),
            "c++ 202002L (this ckptspec: 201703L)");
  EXPECT_EQ(StampDifferences("ckptspec 0.2.0; c++ 201703L; asan on", mine),
            "asan on (this ckptspec: off); ckptspec 0.2.0 (this ckptspec: 0.1.0)");
  EXPECT_EQ(StampDifferences("ckptspec 0.1.0; c++ 201703L", mine),
            "asan missing (this ckptspec: off)");
  EXPECT_EQ(StampDifferences("ckptspec 0.1.0; c++ 201703L; asan off; extra 1", mine),
            "extra 1 (this ckptspec: missing)");
}

TEST(PluginLoader, AnExecutableWithoutAStampIsRefusedBeforeItIsLoaded) {
  std::vector<PluginTarget> targets;
  const Status s = LoadTargetPlugin("/proc/self/exe", &targets);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("plugin '/proc/self/exe': has no compatibility stamp"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("CKPTSPEC_PLUGIN"), std::string::npos) << s.ToString();
  EXPECT_TRUE(targets.empty());
}

TEST(PluginLoader, AFileThatIsNotElfIsRefusedNamingIt) {
  const std::string path = ::testing::TempDir() + "plugin_test_not_elf.so";
  std::ofstream(path) << "#!/bin/sh\n" << std::string(100, '#') << "\necho not a library\n";
  std::vector<PluginTarget> targets;
  const Status s = LoadTargetPlugin(path, &targets);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "plugin '" + path + "': not an ELF file: no ELF magic");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ckptspec
