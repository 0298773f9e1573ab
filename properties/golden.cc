#include "properties/golden.h"

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "harness/harness.h"

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source directory (properties/CMakeLists.txt)"
#endif

namespace ckptspec {

namespace {

constexpr uint64_t kMaxScenarioJson = 1 << 20;

ModelConfig TinyModel(const std::string& name) {
  ModelConfig m;
  m.name = name;
  m.num_layers = 2;
  m.hidden_size = 8;
  m.num_attention_heads = 2;
  m.ffn_hidden_size = 16;
  m.vocab_size = 16;
  return m;
}

TrainingConfig ConfigFor(const Layout& layout, const ModelConfig& model) {
  TrainingConfig c;
  c.model = model;
  c.data.num_samples = 32;
  c.data.micro_batch_size = 1;
  c.data.dp_size = layout.dp();
  c.data.global_batch_size = 2 * layout.dp();
  c.ranks.clear();
  for (int64_t rank = 0; rank < layout.world_size(); ++rank) c.ranks.push_back(layout.Coords(rank));
  return c;
}

Layout MakeLayout(int64_t world, const ParallelSizes& sizes) {
  Layout layout;
  const Status s = Layout::Make(world, sizes, RankOrder(), &layout);
  if (!s.ok()) throw std::logic_error("golden layout: " + s.ToString());
  return layout;
}

GoldenScenario DenseTp2Pp2Dp2() {
  GoldenScenario g;
  g.name = "dense_tp2_pp2_dp2_bf16_fully_reshardable";
  ParallelSizes sizes;
  sizes.tp = 2;
  sizes.pp = 2;
  const Layout layout = MakeLayout(8, sizes);
  g.run.layout = HeterogeneousLayout::Single(layout);
  g.run.configs = {ConfigFor(layout, TinyModel(""))};
  g.run.sharding.optimizer_format = OptimizerFormat::kFullyReshardable;
  g.iteration = 3;
  return g;
}

GoldenScenario MoeEp2DpReshardable() {
  GoldenScenario g;
  g.name = "moe_ep2_dp2_dp_reshardable";
  ParallelSizes sizes;
  sizes.ep = 2;
  const Layout layout = MakeLayout(2, sizes);
  ModelConfig model = TinyModel("");
  model.num_experts = 2;
  model.moe_ffn_hidden_size = 8;
  g.run.layout = HeterogeneousLayout::Single(layout);
  g.run.configs = {ConfigFor(layout, model)};
  g.run.configs[0].optimizer.chaining = Chaining::kDenseExpert;  // Megatron chains with experts
  g.run.sharding.optimizer_format = OptimizerFormat::kDpReshardable;
  g.iteration = 2;
  return g;
}

GoldenScenario HeterogeneousTwoModules() {
  GoldenScenario g;
  g.name = "heterogeneous_vision_tp2_language_dp2";
  ParallelSizes vision_sizes;
  vision_sizes.tp = 2;
  const Layout vision = MakeLayout(2, vision_sizes);
  const Layout language = MakeLayout(2, ParallelSizes());
  const Status s =
      HeterogeneousLayout::Make({{"vision", 0, vision}, {"language", 2, language}}, &g.run.layout);
  if (!s.ok()) throw std::logic_error("golden layout: " + s.ToString());
  g.run.configs = {ConfigFor(vision, TinyModel("vision")),
                   ConfigFor(language, TinyModel("language"))};
  g.run.sharding.optimizer_format = OptimizerFormat::kFullyReshardable;
  g.iteration = 2;
  return g;
}

// Format version 2's per-writer index: a TP2·DP2 dense fp32 run whose four ranks each write.
GoldenScenario DenseTp2Dp2PerWriterIndex() {
  GoldenScenario g;
  g.name = "dense_tp2_dp2_fp32_per_writer_index";
  ParallelSizes sizes;
  sizes.tp = 2;
  const Layout layout = MakeLayout(4, sizes);
  ModelConfig model = TinyModel("");
  model.params_dtype = DType::kFloat32;
  g.run.layout = HeterogeneousLayout::Single(layout);
  g.run.configs = {ConfigFor(layout, model)};
  g.run.sharding.optimizer_format = OptimizerFormat::kFullyReshardable;
  g.iteration = 2;
  g.index_layout = IndexLayout::kPerWriter;
  return g;
}

// Param groups keyed with their declared LR bounds: two regions whose groups differ from the rest
// only in their bounds (one declares both, one only max_lr).
GoldenScenario DenseDp2DeclaredLrBounds() {
  GoldenScenario g;
  g.name = "dense_dp2_fp32_declared_lr_bounds";
  const Layout layout = MakeLayout(2, ParallelSizes());
  ModelConfig model = TinyModel("");
  model.params_dtype = DType::kFloat32;
  g.run.layout = HeterogeneousLayout::Single(layout);
  g.run.configs = {ConfigFor(layout, model)};
  GroupingConfig& grouping = g.run.configs[0].optimizer.grouping;
  grouping.lr_bound_overrides.push_back({"self_attention", 2e-3, 1e-6});
  grouping.lr_bound_overrides.push_back({"mlp", 4e-3, std::nullopt});
  g.run.configs[0].optimizer.step_counter = StepCounter::kPerGroup;
  g.run.sharding.optimizer_format = OptimizerFormat::kFullyReshardable;
  g.iteration = 3;
  return g;
}

constexpr const char* kKeyWithDeclaredLrBounds = "with_declared_lr_bounds";

bool ParseParamGroupKey(const std::string& name, IdentityKeySet* out) {
  if (name != kKeyWithDeclaredLrBounds) return false;
  *out = IdentityKeySet::kWithLrBounds;
  return true;
}

// What scenario.json says of `scenario` before its files are read: its name, format version, param
// group key and iteration (which must be the scenario's), and an object of files.
Status ReadDescription(const JsonField& root, const GoldenScenario& scenario,
                       GoldenCheckpoint* out) {
  const JsonField name = root.Member("scenario");
  std::string described;
  CKPTSPEC_RETURN_IF_ERROR(name.GetString(&described));
  if (described != scenario.name) return name.Expected(JsonPreview(nlohmann::json(scenario.name)));
  CKPTSPEC_RETURN_IF_ERROR(root.Member("format_version").GetInt(&out->format_version));
  out->param_group_key = IdentityKeySet::kCore;
  CKPTSPEC_RETURN_IF_ERROR(
      root.OptionalMember("param_group_key").GetEnum(ParseParamGroupKey, &out->param_group_key));
  const JsonField iteration = root.Member("iteration");
  CKPTSPEC_RETURN_IF_ERROR(iteration.GetInt64(&out->iteration));
  if (out->iteration != scenario.iteration) {
    return iteration.Expected(std::to_string(scenario.iteration) + " (the scenario's code)");
  }
  return root.Member("files").ExpectObject();
}

// "files": each file of `tree` (checkpoint/) with its size, and no other.
Status CheckFiles(const JsonField& files, const StorageTree& tree) {
  CKPTSPEC_RETURN_IF_ERROR(
      files.ForEachMember([&tree](const std::string& path, const JsonField& size_field) {
        uint64_t size = 0;
        CKPTSPEC_RETURN_IF_ERROR(size_field.GetUint64(&size));
        const auto it = tree.find(path);
        if (it == tree.end()) return size_field.Error("checkpoint/ holds no such file");
        if (it->second.size() != size) {
          return size_field.Error("checkpoint/ holds it with " + std::to_string(it->second.size()) +
                                  " bytes");
        }
        return Status::OK();
      }));
  if (tree.size() != files.value().size()) {
    return files.Error("checkpoint/ holds files it does not list");
  }
  return Status::OK();
}

}  // namespace

const std::vector<GoldenScenario>& GoldenScenarios() {
  static const std::vector<GoldenScenario> kScenarios = {
      DenseTp2Pp2Dp2(), MoeEp2DpReshardable(), HeterogeneousTwoModules(),
      DenseTp2Dp2PerWriterIndex(), DenseDp2DeclaredLrBounds()};
  return kScenarios;
}

void showValue(const GoldenScenario& scenario, std::ostream& os) { os << scenario.name; }

std::string GoldenCorpusDir() { return std::string(CKPTSPEC_SOURCE_DIR) + "/corpus/golden"; }

Status WriteGoldenScenario(const GoldenScenario& scenario, const TargetFactory& factory, Env* env,
                           const std::string& dir) {
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(scenario.run, &states));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&states, scenario.iteration));
  auto target = factory.make(TargetOptions());
  if (!target->mem_env()) return Status::InvalidArgument("golden checkpoints need a MemEnv target");
  CKPTSPEC_RETURN_IF_ERROR(
      SaveRun(target->target(), scenario.run, states, scenario.iteration, SaveOptions()));
  CKPTSPEC_RETURN_IF_ERROR(target->target().engine().Finalize());
  StorageTree tree;
  CKPTSPEC_RETURN_IF_ERROR(ReadTree(target->mem_env(), target->root(), &tree));

  nlohmann::json j;
  j["scenario"] = scenario.name;
  j["description"] = DescribeRun(scenario.run);
  j["format_version"] = scenario.index_layout == IndexLayout::kSingle
                            ? kSingleIndexFormatVersion
                            : kPerWriterIndexFormatVersion;
  j["iteration"] = scenario.iteration;
  j["world_size"] = scenario.run.layout.world_size();
  j["optimizer_format"] = OptimizerFormatName(scenario.run.sharding.optimizer_format);
  j["writer"] = factory.name;
  j["param_group_key"] = kKeyWithDeclaredLrBounds;  // what ParamGroupToJson writes
  j["files"] = nlohmann::json::object();
  for (const auto& [path, content] : tree) j["files"][path] = content.size();

  if (env->FileExists(dir).ok()) CKPTSPEC_RETURN_IF_ERROR(env->RemoveTree(dir));
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, JoinPath(dir, "checkpoint")));
  CKPTSPEC_RETURN_IF_ERROR(WriteTree(env, JoinPath(dir, "checkpoint"), tree));
  return WriteFileSynced(env, JoinPath(dir, "scenario.json"), j.dump(1) + "\n");
}

Status ReadGoldenScenario(const GoldenScenario& scenario, Env* env, const std::string& dir,
                          GoldenCheckpoint* out) {
  const std::string json_path = JoinPath(dir, "scenario.json");
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(ReadFileToString(env, json_path, kMaxScenarioJson, &text));
  nlohmann::json j;
  const Status read = ParseJson(text, JsonLimits(), &j);
  if (!read.ok()) return Status::Corruption(json_path + ": " + read.message());
  const JsonField root(j);
  CKPTSPEC_RETURN_IF_ERROR(
      AsCorruption(ReadDescription(root, scenario, out)).WithContext(json_path));
  CKPTSPEC_RETURN_IF_ERROR(ReadTree(env, JoinPath(dir, "checkpoint"), &out->tree));
  const JsonField files = root.Member("files");
  return AsCorruption(CheckFiles(files, out->tree)).WithContext(json_path);
}

}  // namespace ckptspec
