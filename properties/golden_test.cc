#include "properties/golden.h"

#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/mem_env.h"
#include "harness/storage_util.h"
#include "model/json_util.h"

namespace ckptspec {
namespace {

// Every committed golden reads back, and its scenario.json tells the param-group key form its
// checkpoint really holds: "lr_bounds_declared" is in the checkpoint's files exactly when
// scenario.json says the groups are keyed with declared LR bounds. Both forms are committed.
TEST(Golden, EveryGoldenReadsAndNamesTheParamGroupFormItHolds) {
  int older = 0, newer = 0;
  for (const GoldenScenario& scenario : GoldenScenarios()) {
    GoldenCheckpoint golden;
    ASSERT_TRUE(ReadGoldenScenario(scenario, Env::Posix(),
                                   JoinPath(GoldenCorpusDir(), scenario.name), &golden)
                    .ok())
        << scenario.name;
    bool records_bounds = false;
    for (const auto& [path, content] : golden.tree) {
      records_bounds |= content.find("\"lr_bounds_declared\"") != std::string::npos;
    }
    const bool says_newer = golden.param_group_key == IdentityKeySet::kWithLrBounds;
    EXPECT_EQ(records_bounds, says_newer) << scenario.name;
    (says_newer ? newer : older) += 1;
  }
  EXPECT_GT(older, 0) << "no golden of the older param-group form";
  EXPECT_GT(newer, 0) << "no golden whose param groups record their declared LR bounds";
}

// A scenario.json that does not describe its checkpoint is Corruption naming the file and the
// member: the first scenario's golden, copied into memory with one member changed.
TEST(Golden, AMisdescribedCheckpointIsCorruptionNamingTheMember) {
  const GoldenScenario& scenario = GoldenScenarios()[0];
  const std::string golden_dir = JoinPath(GoldenCorpusDir(), scenario.name);
  std::string text;
  ASSERT_TRUE(
      ReadFileToString(Env::Posix(), JoinPath(golden_dir, "scenario.json"), 1 << 20, &text).ok());
  StorageTree tree;
  ASSERT_TRUE(ReadTree(Env::Posix(), JoinPath(golden_dir, "checkpoint"), &tree).ok());
  MemEnv env;
  ASSERT_TRUE(CreateDirs(&env, "/g/checkpoint").ok());
  ASSERT_TRUE(WriteTree(&env, "/g/checkpoint", tree).ok());
  const auto error = [&](const std::function<void(nlohmann::json*)>& change) {
    nlohmann::json j = nlohmann::json::parse(text);
    change(&j);
    EXPECT_TRUE(WriteFileSynced(&env, "/g/scenario.json", j.dump()).ok());
    GoldenCheckpoint out;
    const Status s = ReadGoldenScenario(scenario, &env, "/g", &out);
    if (s.ok()) return std::string();
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
    return s.message();
  };
  EXPECT_EQ(error([](nlohmann::json*) {}), "");
  EXPECT_EQ(error([](nlohmann::json* j) { (*j)["iteration"] = 99; }),
            "/g/scenario.json: iteration: expected " + std::to_string(scenario.iteration) +
                " (the scenario's code), got 99");
  EXPECT_EQ(error([](nlohmann::json* j) { j->erase("format_version"); }),
            "/g/scenario.json: (root): missing required member \"format_version\"");
  EXPECT_EQ(error([](nlohmann::json* j) { (*j)["param_group_key"] = "core"; }),
            "/g/scenario.json: param_group_key: unknown value \"core\"");
  const std::string first = tree.begin()->first;
  std::string first_path = "files";
  AppendJsonPathMember(first, &first_path);
  EXPECT_EQ(error([&](nlohmann::json* j) { (*j)["files"][first] = 1; }),
            "/g/scenario.json: " + first_path + ": checkpoint/ holds it with " +
                std::to_string(tree.begin()->second.size()) + " bytes");
  EXPECT_EQ(error([&](nlohmann::json* j) { (*j)["files"].erase(first); }),
            "/g/scenario.json: files: checkpoint/ holds files it does not list");
}

}  // namespace
}  // namespace ckptspec
