// Writes the fuzz targets' seed corpora from real checkpoints of the reference:
//   seed_tool CORPUS_DIR
// creates CORPUS_DIR/<target>_seed_corpus/ for metadata_fuzzer, signature_fuzzer and
// common_state_fuzzer. Run it deliberately when the formats change (never from CI); the
// corpora are committed.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/param_sharding.h"
#include "model/rerun_state_machine.h"
#include "model/rng_streams.h"
#include "model/signature_json.h"
#include "model/state_sharding.h"
#include "model/training_step.h"
#include "targets/env/mem_env.h"
#include "targets/reference/format.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

Status Die(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "seed_tool: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  return s;
}

struct Scenario {
  const char* name;
  int64_t world;
  ParallelSizes sizes;
  ModelConfig model;
  OptimizerFormat format;
};

void WriteScenario(const Scenario& sc, const fs::path& corpus) {
  Layout layout;
  Die(Layout::Make(sc.world, sc.sizes, RankOrder(), &layout));
  TrainingConfig config;
  config.model = sc.model;
  config.ranks = RankCoordsOf(layout);
  config.data.dp_size = layout.dp();
  config.data.global_batch_size = 2 * layout.dp();
  config.data.micro_batch_size = 1;
  if (sc.model.num_experts > 0) config.optimizer.chaining = Chaining::kDenseExpert;
  TrainingState state;
  Die(InitialTrainingState(config, &state));
  Die(Train(&state, 2));
  ShardingConfig sharding;
  sharding.optimizer_format = sc.format;
  std::vector<ShardedStateDict> dicts;
  Die(ShardTrainingState(layout, state, sharding, &dicts));

  MemEnv env;
  Die(env.CreateDir("/ckpt"));
  ReferenceOptions options;
  options.env = &env;
  options.root = "/ckpt";
  ReferenceEngine engine(std::move(options));
  Die(engine.Save(state.iteration, dicts, SaveOptions()));
  std::string metadata, tracker;
  Die(ReadFileToString(&env, "/ckpt/" + IterationDirName(state.iteration) + "/metadata.json", 1 << 26, &metadata));
  Die(ReadFileToString(&env, "/ckpt/latest_checkpointed_iteration.txt", 1 << 10, &tracker));
  Write(corpus / "metadata_fuzzer_seed_corpus", std::string(sc.name) + ".json", metadata);
  Write(corpus / "metadata_fuzzer_seed_corpus", std::string(sc.name) + "_tracker.txt", tracker);

  GlobalSignature signature;
  for (size_t r = 0; r < dicts.size(); ++r) signature.ranks.push_back(SignatureOf(r, dicts[r], true));
  Write(corpus / "signature_fuzzer_seed_corpus", std::string(sc.name) + ".json",
        SignatureToJson(signature).dump());

  Write(corpus / "common_state_fuzzer_seed_corpus", std::string(sc.name) + "_common.json",
        dicts[0].common.dump());
  Write(corpus / "common_state_fuzzer_seed_corpus", std::string(sc.name) + "_rng.json",
        RankRngStateToJson(state.rng[0]).dump());
  nlohmann::json payload;
  Die(CheckpointPayload(state.rerun, &payload));
  Write(corpus / "common_state_fuzzer_seed_corpus", std::string(sc.name) + "_rerun.json", payload.dump());
}

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  using namespace ckptspec;
  if (argc != 2) {
    std::fprintf(stderr, "usage: seed_tool CORPUS_DIR\n");
    return 2;
  }
  ModelConfig dense;
  dense.num_layers = 2;
  dense.hidden_size = 8;
  dense.num_attention_heads = 2;
  dense.ffn_hidden_size = 8;
  dense.vocab_size = 8;
  ModelConfig moe = dense;
  moe.num_experts = 2;
  moe.moe_ffn_hidden_size = 4;
  const Scenario scenarios[] = {
      {"tp2_pp2_dp2_dense_fully", 8, {2, 2, 0, 1, 1, 0}, dense, OptimizerFormat::kFullyReshardable},
      {"tp1_dp4_ep2_moe_dp_reshardable", 4, {1, 1, 0, 1, 2, 0}, moe, OptimizerFormat::kDpReshardable},
      {"tp2_dp1_moe_fully", 2, {2, 1, 0, 1, 1, 0}, moe, OptimizerFormat::kFullyReshardable},
  };
  for (const Scenario& sc : scenarios) WriteScenario(sc, argv[1]);
  std::printf("seed corpora written under %s\n", argv[1]);
  return 0;
}
