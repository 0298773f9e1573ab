// Helpers shared by the reference engine's tests (header-only; not part of the library).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "model/content_fill.h"
#include "model/param_sharding.h"
#include "base/mem_env.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {
namespace testing_util {

inline ModelConfig SmallModel() {
  ModelConfig m;
  m.num_layers = 4;
  m.hidden_size = 16;
  m.num_attention_heads = 4;
  m.ffn_hidden_size = 32;
  m.vocab_size = 32;
  return m;
}

inline ParameterSharding MakeSharding(int64_t world, int64_t tp, int64_t pp,
                                      const ModelConfig& model = SmallModel()) {
  ParallelSizes sizes;
  sizes.tp = tp;
  sizes.pp = pp;
  Layout layout;
  Status s = Layout::Make(world, sizes, RankOrder(), &layout);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ParameterSharding sharding;
  s = ParameterSharding::Make(layout, model, &sharding);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sharding;
}

// Every rank's parameter dict with generator content under `seed`.
inline std::vector<ShardedStateDict> DictsOf(const ParameterSharding& sharding, uint64_t seed) {
  std::vector<ShardedStateDict> dicts;
  for (int64_t rank = 0; rank < sharding.world_size(); ++rank) {
    dicts.push_back(sharding.RankStateDict(rank, seed));
  }
  return dicts;
}

// Every rank's load template for the parameters: the same specs with zeroed buffers.
inline std::vector<ShardedStateDict> TemplatesOf(const ParameterSharding& sharding) {
  std::vector<ShardedStateDict> templates;
  for (int64_t rank = 0; rank < sharding.world_size(); ++rank) {
    templates.push_back(TemplateOf(sharding.RankStateDict(rank, 0)));
  }
  return templates;
}

// "" when every loaded tensor holds the generator's content under `seed`, else the first mismatch.
inline std::string CheckContent(const std::vector<ShardedStateDict>& loaded, uint64_t seed) {
  for (size_t r = 0; r < loaded.size(); ++r) {
    for (const ShardedTensor& t : loaded[r].tensors) {
      std::vector<uint8_t> want(t.data.size());
      FillContent(t.spec.dtype, seed, KeyHash(t.spec.key), t.spec.global_shape, t.spec.box(),
                  want.data());
      if (want != t.data) {
        return "rank " + std::to_string(r) + " tensor '" + t.spec.key + "' " +
               BoxToString(t.spec.box()) + " differs from seed " + std::to_string(seed);
      }
    }
  }
  return "";
}

// A float32 tensor `key` of `global_shape` whose chunk at `offset` has shape `local` and every
// byte `fill`.
inline ShardedTensor Tensor(const std::string& key, Dims global_shape, Dims offset, Dims local,
                            ReplicaId replica, uint8_t fill) {
  ShardedTensor t;
  t.spec.key = key;
  t.spec.dtype = DType::kFloat32;
  t.spec.global_shape = std::move(global_shape);
  t.spec.global_offset = std::move(offset);
  t.spec.local_shape = std::move(local);
  t.spec.replica_id = std::move(replica);
  t.data.assign(Volume(t.spec.local_shape) * 4, fill);
  return t;
}

// Makes "/ckpt" on `env` durable and gives the options of a reference engine rooted there.
inline ReferenceOptions OptionsAtCkpt(MemEnv* env, int keep_last, AsyncExecution async) {
  EXPECT_TRUE(env->CreateDir("/ckpt").ok());
  EXPECT_TRUE(env->SyncDir("/").ok());
  ReferenceOptions options;
  options.env = env;
  options.root = "/ckpt";
  options.keep_last = keep_last;
  options.async_execution = async;
  return options;
}

// A MemEnv with "/ckpt" durable, and a reference engine on it.
struct MemHarness {
  explicit MemHarness(int keep_last = 0, AsyncExecution async = AsyncExecution::kDeferred,
                      std::unique_ptr<PlanCache> cache = nullptr) {
    ReferenceOptions options = OptionsAtCkpt(&env, keep_last, async);
    options.plan_cache = std::move(cache);
    engine = std::make_unique<ReferenceEngine>(std::move(options));
  }
  MemEnv env;
  std::unique_ptr<ReferenceEngine> engine;
};

// A reference engine on `env` at "/ckpt" that writes `layout` (and reads either).
inline std::unique_ptr<ReferenceEngine> EngineOn(MemEnv* env, IndexLayout layout) {
  ReferenceOptions options;
  options.env = env;
  options.root = "/ckpt";
  options.async_execution = AsyncExecution::kDeferred;
  options.index_layout = layout;
  return std::make_unique<ReferenceEngine>(std::move(options));
}

inline Status LoadInto(Engine& engine, const std::vector<ShardedStateDict>& templates,
                       LoadResult* result, StrictMode strict = StrictMode::kAssumeOkUnexpected,
                       std::optional<int64_t> iteration = std::nullopt) {
  LoadRequest request;
  request.templates = templates;
  request.strict = strict;
  request.iteration = iteration;
  return engine.Load(request, result);
}

}  // namespace testing_util
}  // namespace ckptspec
