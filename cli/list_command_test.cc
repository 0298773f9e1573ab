// `ckptspec list`: the catalogs, and a plugin's targets with --plugin (a plugin that loads is
// exercised by examples/plugin/'s ctests, which build one).
#include "cli/list_command.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ckptspec {
namespace {

TEST(ListCommand, ListsTheCatalogsAndTheBuiltInTargets) {
  ListOptions o;
  std::ostringstream out, err;
  EXPECT_EQ(RunListCommand(o, out, err), 0);
  EXPECT_NE(out.str().find("P1"), std::string::npos);
  EXPECT_NE(out.str().find("reference  (expected clean)"), std::string::npos);
  EXPECT_NE(out.str().find("optimizer-order-per-process"), std::string::npos);
  EXPECT_EQ(err.str(), "");
}

TEST(ListCommand, APluginThatDoesNotLoadIsExit2WithRunsMessage) {
  ListOptions o;
  o.plugins = {"/dev/zero"};
  std::ostringstream out, err;
  EXPECT_EQ(RunListCommand(o, out, err), 2);
  EXPECT_EQ(err.str(),
            "ckptspec list: --plugin '/dev/zero': a character device, not a regular file\n");
  EXPECT_EQ(out.str(), "");
}

TEST(ListCommand, MarkdownDoesNotTakeAPlugin) {
  ListOptions o;
  o.markdown = true;
  o.plugins = {"/dev/zero"};
  std::ostringstream out, err;
  EXPECT_EQ(RunListCommand(o, out, err), 2);
  EXPECT_NE(err.str().find("--markdown prints the catalogs' tables only"), std::string::npos);
}

}  // namespace
}  // namespace ckptspec
