#include "cli/layout_command.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cli/parse_error_test_util.h"

namespace ckptspec {
namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunCommand(const LayoutOptions& options) {
  std::ostringstream out, err;
  const int code = RunLayoutCommand(options, out, err);
  return {code, out.str(), err.str()};
}

TEST(LayoutCommand, ValidMoeLayoutPassesEveryCheck) {
  LayoutOptions o;
  o.sizes = {2, 2, 0, 1, 2, 1};
  o.world = 8;
  o.model.num_experts = 4;
  o.show_rank = 5;
  const Result r = RunCommand(o);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("P4 sharding integrity: OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("P5 key injectivity: OK"), std::string::npos);
  EXPECT_NE(r.out.find("rank 5: tp 1, cp 0, dp 0, pp 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tp group: 4 5"), std::string::npos) << r.out;
}

TEST(LayoutCommand, InvalidLayoutNamesFieldAndValue) {
  LayoutOptions o;
  o.sizes.tp = 3;
  o.world = 8;
  const Result r = RunCommand(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("world_size = 8 is not divisible by tp × cp × pp = 3 × 1 × 1 = 3"),
            std::string::npos)
      << r.err;
  o = LayoutOptions();
  o.sizes.tp = 2;
  o.model.num_attention_heads = 3;
  o.model.hidden_size = 48;
  EXPECT_NE(RunCommand(o).err.find("num_attention_heads = 3 is not divisible by tp = 2"),
            std::string::npos);
}

TEST(LayoutCommand, HeterogeneousModules) {
  LayoutOptions o;
  o.modules = {"vision:world=2,tp=2,layers=2", "language:world=4,tp=2,pp=2"};
  o.show_rank = 3;
  const Result r = RunCommand(o);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("layout 'language' ranks [2, 6)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 3 (module 'language', local rank 1)"), std::string::npos) << r.out;
}

TEST(LayoutCommand, ModuleSpecErrorsNameSpecAndKey) {
  LayoutOptions o;
  std::string name;
  int64_t world;
  ParallelSizes sizes;
  ModelConfig model;
  EXPECT_EQ(ParseModuleSpec("vision:tp=two", o, &name, &world, &sizes, &model).message(),
            "--module 'vision:tp=two': tp 'two' is not a whole number (accepted: 1 to 2147483648)");
  EXPECT_EQ(
      ParseModuleSpec("vision:tp=99999999999999999999", o, &name, &world, &sizes, &model).message(),
      "--module 'vision:tp=99999999999999999999': tp '99999999999999999999' is out of range "
      "(accepted: 1 to 2147483648)");
  EXPECT_EQ(ParseModuleSpec("vision:layers=0", o, &name, &world, &sizes, &model).message(),
            "--module 'vision:layers=0': layers '0' is out of range (accepted: 1 to 100000)");
  EXPECT_EQ(ParseModuleSpec("vision:hidden=4294967360", o, &name, &world, &sizes, &model).message(),
            "--module 'vision:hidden=4294967360': hidden '4294967360' is out of range "
            "(accepted: 1 to 16777216)");
  EXPECT_EQ(ParseModuleSpec("vision:color=2", o, &name, &world, &sizes, &model).message(),
            "--module 'vision:color=2': unknown key 'color'");
  EXPECT_EQ(ParseModuleSpec(":tp=2", o, &name, &world, &sizes, &model).message(),
            "--module ':tp=2': missing name before ':'");
  EXPECT_EQ(ParseModuleSpec("vision:tp", o, &name, &world, &sizes, &model).message(),
            "--module 'vision:tp': 'tp' is not key=value");
  ASSERT_TRUE(
      ParseModuleSpec("vision:world=4,tp=2,layers=6", o, &name, &world, &sizes, &model).ok());
  EXPECT_EQ(world, 4);
  EXPECT_EQ(sizes.tp, 2);
  EXPECT_EQ(model.num_layers, 6);
  EXPECT_EQ(model.name, "vision");
}

// Each numeric flag is declared once with its range: parsing refuses what is outside it (nothing
// wraps: 4294967360 is not 64), and --help shows it.
TEST(LayoutCommand, NumericFlagsOutOfRangeAreParseErrors) {
  const auto parse_error = [](const std::string& args) {
    CLI::App app;
    LayoutOptions o;
    AddLayoutCommand(app, &o);
    return ParseErrorOf(app, "layout " + args);
  };
  EXPECT_EQ(parse_error("--tp 99999999999999999999999"),
            "--tp '99999999999999999999999' is out of range (accepted: 1 to 2147483648)");
  EXPECT_EQ(parse_error("--hidden 4294967360"),
            "--hidden '4294967360' is out of range (accepted: 1 to 16777216)");
  EXPECT_EQ(parse_error("--world -4"), "--world '-4' is out of range (accepted: 0 to 2147483648)");
  EXPECT_EQ(parse_error("--rank 1.5"),
            "--rank '1.5' is not a whole number (accepted: -1 to 2147483647)");
  EXPECT_EQ(parse_error("--tp 2 --world 8 --first-stage-layers -1 --rank 3"), "parsed");
  CLI::App app;
  LayoutOptions o;
  const std::string help = AddLayoutCommand(app, &o)->help();
  EXPECT_NE(help.find("tensor parallel size (1 to 2147483648)"), std::string::npos) << help;
  EXPECT_NE(
      help.find("keys: world tp pp dp cp ep etp layers hidden heads groups ffn vocab experts"),
      std::string::npos)
      << help;
}

// --signature-out is opened before the work (nothing printed yet), and a full disk is exit 2.
TEST(LayoutCommand, SignatureOutIsCheckedFirstAndWriteErrorsAreExit2) {
  LayoutOptions o;
  o.signature_out = "/nonexistent/dir/sig.json";
  Result r = RunCommand(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "ckptspec layout: --signature-out '/nonexistent/dir/sig.json': cannot open for writing: "
      "No such file or directory\n");
  EXPECT_EQ(r.out, "");
  o.signature_out = "/dev/full";
  r = RunCommand(o);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "ckptspec layout: --signature-out '/dev/full': cannot write: No space left on device\n");
}

}  // namespace
}  // namespace ckptspec
