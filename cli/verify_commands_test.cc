#include "cli/verify_commands.h"

#include <gtest/gtest.h>

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
  o.file = TempFile("bad.json", "{\"format\": \"ckptspec.signature\", \"version\": 1, \"ranks\": [{\"rank\": 0, \"tensors\": 5}]}");
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("ranks[0].tensors"), std::string::npos) << err;
  o.file = ::testing::TempDir() + "does-not-exist.json";
  EXPECT_EQ(RunPlan(o, &out, &err), 2);
  EXPECT_NE(err.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace ckptspec
