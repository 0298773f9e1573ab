#include "cli/verify_commands.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "model/param_sharding.h"
#include "model/signature_json.h"

namespace ckptspec {
namespace {

std::string TempFile(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << content;
  return path;
}

GlobalSignature SmallSignature() {
  Layout layout;
  EXPECT_TRUE(Layout::Make(4, {2, 1, 0, 1, 1, 0}, RankOrder(), &layout).ok());
  ParameterSharding sharding;
  EXPECT_TRUE(ParameterSharding::Make(layout, ModelConfig(), &sharding).ok());
  return sharding.Signature();
}

int RunPlan(const VerifyPlanOptions& o, std::string* out, std::string* err) {
  std::ostringstream os, es;
  const int code = RunVerifyPlanCommand(o, os, es);
  *out = os.str();
  *err = es.str();
  return code;
}

TEST(VerifyPlanCommand, CleanOverlappingAndMalformedDumps) {
  GlobalSignature sig = SmallSignature();
  VerifyPlanOptions o;
  std::string out, err;
  o.file = TempFile("clean.json", SignatureToJson(sig).dump());
  EXPECT_EQ(RunPlan(o, &out, &err), 0) << out << err;
  EXPECT_NE(out.find("P4 sharding integrity: OK"), std::string::npos);

  // Rank 1 (tp 1) claims the main replica of a replicated norm that rank 0 writes: an overlap.
  for (TensorSpec& t : sig.ranks[1].tensors) {
    if (t.key.find("layer_norm") != std::string::npos) t.replica_id = {0, 0, 0};
  }
  o.file = TempFile("overlap.json", SignatureToJson(sig).dump());
  EXPECT_EQ(RunPlan(o, &out, &err), 1);
  EXPECT_NE(out.find("overlap"), std::string::npos) << out;

  // P6 against the clean dump: re-replicated entries.
  o.against = TempFile("clean.json", SignatureToJson(SmallSignature()).dump());
  EXPECT_EQ(RunPlan(o, &out, &err), 1);
  EXPECT_NE(out.find("P6 constant structure: "), std::string::npos) << out;

  o.against.clear();
  o.file = TempFile("bad.json",
                    "{\"format\": \"ckptspec.signature\", \"version\": 1, \"ranks\": [{\"rank\": "
                    "0, \"tensors\": 5}]}");
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("ranks[0].tensors"), std::string::npos) << err;
  o.file = ::testing::TempDir() + "does-not-exist.json";
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
}

// A FIFO would block an open for reading until a writer comes: every input that is not what the
// verb expects is refused before it is opened, naming the path and what it is.
TEST(VerifyCommands, SpecialFilesAreRefusedBeforeTheyAreOpened) {
  const std::string fifo = ::testing::TempDir() + "verify_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::string out, err;
  VerifyPlanOptions plan;
  plan.file = fifo;
  EXPECT_EQ(RunPlan(plan, &out, &err), 2);
  EXPECT_NE(err.find("plan dump '" + fifo + "': a FIFO, not a regular file"), std::string::npos)
      << err;
  plan.file = TempFile("clean_for_fifo.json", SignatureToJson(SmallSignature()).dump());
  plan.against = fifo;
  EXPECT_EQ(RunPlan(plan, &out, &err), 2);
  EXPECT_NE(err.find("--against '" + fifo + "': a FIFO, not a regular file"), std::string::npos)
      << err;
  plan.against = ::testing::TempDir();
  EXPECT_EQ(RunPlan(plan, &out, &err), 2);
  EXPECT_NE(err.find("a directory, not a regular file"), std::string::npos) << err;

  VerifyOptions verify;
  for (const std::string& path : {fifo, plan.file}) {
    verify.dir = path;
    std::ostringstream os, es;
    EXPECT_EQ(RunVerifyCommand(verify, os, es), 2);
    EXPECT_NE(es.str().find(std::string(path == fifo ? "a FIFO" : "a regular file") +
                            ", not a checkpoint directory"),
              std::string::npos)
        << es.str();
  }
  ::unlink(fifo.c_str());
}

TEST(VerifyCommands, PlanDumpLimitsAreNamedWithTheirFlags) {
  const GlobalSignature sig = SmallSignature();
  std::string out, err;
  VerifyPlanOptions o;
  o.file = TempFile("limits.json", SignatureToJson(sig).dump());
  o.limits.max_chunks = 1;
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("entries exceed max_chunks = 1 (--max-chunks raises it)"), std::string::npos)
      << err;
  o.limits = ResourceLimits();
  o.limits.max_metadata_bytes = 10;
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("bytes exceed max_metadata_bytes = 10 (--max-metadata-bytes raises it)"),
            std::string::npos)
      << err;
  o.limits = ResourceLimits();
  o.limits.max_json_depth = 2;
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("nests deeper than 2 levels"), std::string::npos) << err;
  o.limits = ResourceLimits();
  EXPECT_EQ(RunPlan(o, &out, &err), 0) << err;
}

// Every row of the limits table is a flag of both verbs, range-checked.
TEST(VerifyCommands, EveryLimitIsAFlagOfBothVerbs) {
  for (const ResourceLimitInfo& info : kResourceLimitTable) {
    CLI::App app;
    VerifyOptions verify;
    VerifyPlanOptions plan;
    AddVerifyCommand(app, &verify);
    AddVerifyPlanCommand(app, &plan);
    app.parse(std::vector<std::string>{std::to_string(info.max), info.flag, "dir", "verify"});
    EXPECT_EQ(verify.limits.*info.field, info.max) << info.flag;
    CLI::App app2;
    AddVerifyPlanCommand(app2, &plan);
    app2.parse(
        std::vector<std::string>{std::to_string(info.min), info.flag, "file", "verify-plan"});
    EXPECT_EQ(plan.limits.*info.field, info.min) << info.flag;
    CLI::App app3;
    AddVerifyCommand(app3, &verify);
    EXPECT_THROW(app3.parse(std::vector<std::string>{std::to_string(info.min - 1), info.flag, "dir",
                                                     "verify"}),
                 CLI::ValidationError)
        << info.flag;
  }
}

}  // namespace
}  // namespace ckptspec
