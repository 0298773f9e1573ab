#include "cli/layout_command.h"

#include <algorithm>

#include "cli/numeric_flag.h"
#include "cli/output_file.h"
#include "model/param_sharding.h"
#include "model/signature_json.h"
#include "model/validate.h"

namespace ckptspec {

namespace {

// The numeric flags, each declared once: the table drives parsing, --help and the --module keys.
// Sizes are bounded by Layout::Make's largest world; model dimensions so that every derived size
// (4 * hidden for a default ffn, qkv rows) stays within an int.
constexpr int64_t kMaxWorld = int64_t{1} << 31;
constexpr int kMaxLayers = 100000;
constexpr int kMaxModelDimension = 1 << 24;
constexpr int kMaxExperts = 1 << 16;
constexpr NumberRange<int64_t> kWorldRange{0, kMaxWorld};

struct SizeFlag {
  const char* flag;
  const char* module_key;
  int64_t ParallelSizes::*field;
  NumberRange<int64_t> range;
  const char* help;
};
const SizeFlag kSizeFlags[] = {
    {"--tp", "tp", &ParallelSizes::tp, {1, kMaxWorld}, "tensor parallel size"},
    {"--pp", "pp", &ParallelSizes::pp, {1, kMaxWorld}, "pipeline parallel size"},
    {"--dp",
     "dp",
     &ParallelSizes::dp,
     {0, kMaxWorld},
     "data parallel size (0: derived from world)"},
    {"--cp", "cp", &ParallelSizes::cp, {1, kMaxWorld}, "context parallel size"},
    {"--ep", "ep", &ParallelSizes::ep, {1, kMaxWorld}, "expert parallel size"},
    {"--etp",
     "etp",
     &ParallelSizes::etp,
     {0, kMaxWorld},
     "expert tensor parallel size (0: same as tp)"},
};

struct ModelFlag {
  const char* flag;
  const char* module_key;  // nullptr: not a --module key
  int* (*field)(ModelConfig*);
  NumberRange<int> range;
  const char* help;
};
const ModelFlag kModelFlags[] = {
    {"--layers",
     "layers",
     [](ModelConfig* m) { return &m->num_layers; },
     {1, kMaxLayers},
     "number of transformer layers"},
    {"--hidden",
     "hidden",
     [](ModelConfig* m) { return &m->hidden_size; },
     {1, kMaxModelDimension},
     "hidden size"},
    {"--heads",
     "heads",
     [](ModelConfig* m) { return &m->num_attention_heads; },
     {1, kMaxModelDimension},
     "attention heads"},
    {"--query-groups",
     "groups",
     [](ModelConfig* m) { return &m->num_query_groups; },
     {0, kMaxModelDimension},
     "query groups (0: one per head)"},
    {"--ffn",
     "ffn",
     [](ModelConfig* m) { return &m->ffn_hidden_size; },
     {0, kMaxModelDimension},
     "ffn hidden size (0: 4*hidden)"},
    {"--vocab",
     "vocab",
     [](ModelConfig* m) { return &m->vocab_size; },
     {1, kMaxModelDimension},
     "vocabulary size"},
    {"--experts",
     "experts",
     [](ModelConfig* m) { return &m->num_experts; },
     {0, kMaxExperts},
     "MoE experts (0: dense)"},
    {"--moe-ffn",
     nullptr,
     [](ModelConfig* m) { return &m->moe_ffn_hidden_size; },
     {0, kMaxModelDimension},
     "expert ffn size (0: ffn)"},
    {"--moe-layer-freq",
     nullptr,
     [](ModelConfig* m) { return &m->moe_layer_freq; },
     {1, kMaxLayers},
     "every k-th layer is MoE"},
    {"--first-stage-layers",
     nullptr,
     [](ModelConfig* m) { return &m->pipeline_split.first_stage_layers; },
     {-1, kMaxLayers},
     "layers on the first pipeline stage (-1: even split)"},
    {"--last-stage-layers",
     nullptr,
     [](ModelConfig* m) { return &m->pipeline_split.last_stage_layers; },
     {-1, kMaxLayers},
     "layers on the last pipeline stage (-1: even split)"},
};

std::string ModuleKeys() {
  std::string keys = "world";
  for (const SizeFlag& f : kSizeFlags) keys += std::string(" ") + f.module_key;
  for (const ModelFlag& f : kModelFlags) {
    if (f.module_key) keys += std::string(" ") + f.module_key;
  }
  return keys;
}

}  // namespace

CLI::App* AddLayoutCommand(CLI::App& app, LayoutOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "layout",
      "Build a layout and a model from flags, shard the parameters canonically and "
      "print the validation report (P4, P5, P11)");
  AddNumberFlag(cmd, "--world", &o->world, kWorldRange, "world size (0: tp*cp*pp*max(dp,1))");
  for (const SizeFlag& f : kSizeFlags)
    AddNumberFlag(cmd, f.flag, &(o->sizes.*f.field), f.range, f.help);
  cmd->add_option("--order", o->order, "rank order, first token fastest")->capture_default_str();
  for (const ModelFlag& f : kModelFlags)
    AddNumberFlag(cmd, f.flag, f.field(&o->model), f.range, f.help);
  cmd->add_flag("--glu", o->model.gated_linear_unit, "gated linear unit (fc1 is 2*ffn)");
  cmd->add_flag("--bias", o->model.add_bias, "linear layers have biases");
  cmd->add_flag("!--untied", o->model.tie_embeddings, "untie the output layer from the embedding");
  cmd->add_option("--module", o->modules,
                  "heterogeneous module 'name:key=value,...' (keys: " + ModuleKeys() +
                      "; the same ranges as the flags); repeat per module, in rank order");
  AddNumberFlag(cmd, "--rank", &o->show_rank, NumberRange<int64_t>{-1, kMaxWorld - 1},
                "print this global rank's coordinates and groups (-1: none)");
  cmd->add_option("--signature-out", o->signature_out,
                  "write the parameter signature (plan dump JSON, docs/SIGNATURE.md) to FILE");
  return cmd;
}

Status ParseModuleSpec(const std::string& spec, const LayoutOptions& o, std::string* name,
                       int64_t* world, ParallelSizes* sizes, ModelConfig* model) {
  const size_t colon = spec.find(':');
  *name = spec.substr(0, colon);
  *sizes = o.sizes;
  *model = o.model;
  model->name = *name;
  *world = 0;
  if (name->empty())
    return Status::InvalidArgument("--module '" + spec + "': missing name before ':'");
  if (colon == std::string::npos) return Status::OK();
  std::string rest = spec.substr(colon + 1);
  size_t start = 0;
  while (start < rest.size()) {
    const size_t end = std::min(rest.find(',', start), rest.size());
    const std::string item = rest.substr(start, end - start);
    start = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return Status::InvalidArgument("--module '" + spec + "': '" + item + "' is not key=value");
    }
    const std::string key = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    const std::string flag = "--module '" + spec + "': " + key;
    if (key == "world") {
      CKPTSPEC_RETURN_IF_ERROR(ParseNumber(flag, text, kWorldRange, world));
      continue;
    }
    bool known = false;
    for (const SizeFlag& f : kSizeFlags) {
      if (key != f.module_key) continue;
      CKPTSPEC_RETURN_IF_ERROR(ParseNumber(flag, text, f.range, &(sizes->*f.field)));
      known = true;
    }
    for (const ModelFlag& f : kModelFlags) {
      if (!f.module_key || key != f.module_key) continue;
      CKPTSPEC_RETURN_IF_ERROR(ParseNumber(flag, text, f.range, f.field(model)));
      known = true;
    }
    if (!known)
      return Status::InvalidArgument("--module '" + spec + "': unknown key '" + key + "'");
  }
  return Status::OK();
}

namespace {

int64_t DefaultWorld(const ParallelSizes& s) {
  return s.tp * s.cp * s.pp * std::max<int64_t>(s.dp, 1);
}

Status BuildSharding(const LayoutOptions& o, ParameterSharding* sharding) {
  RankOrder order;
  CKPTSPEC_RETURN_IF_ERROR(RankOrder::Parse(o.order, &order));
  if (o.modules.empty()) {
    Layout layout;
    const int64_t world = o.world > 0 ? o.world : DefaultWorld(o.sizes);
    CKPTSPEC_RETURN_IF_ERROR(Layout::Make(world, o.sizes, order, &layout));
    return ParameterSharding::Make(layout, o.model, sharding);
  }
  std::vector<ModuleLayout> modules;
  std::vector<ModelConfig> models;
  int64_t next_rank = 0;
  for (const std::string& spec : o.modules) {
    std::string name;
    int64_t world;
    ParallelSizes sizes;
    ModelConfig model;
    CKPTSPEC_RETURN_IF_ERROR(ParseModuleSpec(spec, o, &name, &world, &sizes, &model));
    Layout layout;
    CKPTSPEC_RETURN_IF_ERROR(
        Layout::Make(world > 0 ? world : DefaultWorld(sizes), sizes, order, &layout)
            .WithContext("module '" + name + "'"));
    modules.push_back({name, next_rank, layout});
    next_rank += layout.world_size();
    models.push_back(model);
  }
  HeterogeneousLayout layout;
  CKPTSPEC_RETURN_IF_ERROR(HeterogeneousLayout::Make(modules, &layout));
  return ParameterSharding::Make(layout, models, sharding);
}

void PrintRank(const ParameterSharding& sharding, int64_t rank, std::ostream& out) {
  const HeterogeneousLayout& h = sharding.layout();
  const ModuleLayout& module = h.modules()[h.ModuleOf(rank)];
  const int64_t local = rank - module.first_rank;
  const RankCoords c = module.layout.Coords(local);
  out << "rank " << rank;
  if (!module.name.empty()) out << " (module '" << module.name << "', local rank " << local << ")";
  out << ": tp " << c.tp << ", cp " << c.cp << ", dp " << c.dp << ", pp " << c.pp << ", dp-cp "
      << c.dp_cp << " | ep " << c.ep << ", etp " << c.etp << ", edp " << c.edp << "\n";
  for (GroupKind kind : {GroupKind::kTensor, GroupKind::kPipeline, GroupKind::kData,
                         GroupKind::kContext, GroupKind::kDataContext, GroupKind::kModel,
                         GroupKind::kExpert, GroupKind::kExpertTensor, GroupKind::kExpertData}) {
    out << "  " << GroupKindName(kind) << " group:";
    for (int64_t member : module.layout.Group(kind, local))
      out << " " << member + module.first_rank;
    out << "\n";
  }
}

}  // namespace

int RunLayoutCommand(const LayoutOptions& o, std::ostream& out, std::ostream& err) {
  // The output file is opened before any work: a path that cannot be written fails at once.
  OutputFile signature_out;
  if (!o.signature_out.empty()) {
    const Status opened = signature_out.Open("--signature-out", o.signature_out);
    if (!opened.ok()) {
      err << "ckptspec layout: " << opened.message() << "\n";
      return 2;
    }
  }
  ParameterSharding sharding;
  const Status built = BuildSharding(o, &sharding);
  if (!built.ok()) {
    err << "ckptspec layout: invalid input: " << built.message() << "\n";
    return 2;
  }
  for (const ModuleLayout& m : sharding.layout().modules()) {
    out << "layout" << (m.name.empty() ? "" : " '" + m.name + "'") << " ranks [" << m.first_rank
        << ", " << m.end_rank() << "): " << m.layout.ToString() << "\n";
  }
  if (o.show_rank >= 0) {
    if (o.show_rank >= sharding.world_size()) {
      err << "ckptspec layout: --rank " << o.show_rank << " is outside the world of "
          << sharding.world_size() << " ranks\n";
      return 2;
    }
    PrintRank(sharding, o.show_rank, out);
  }
  const GlobalSignature signature = sharding.Signature();
  size_t entries = 0;
  for (const RankSignature& r : signature.ranks) entries += r.tensors.size();
  out << "parameter sharding: " << entries << " tensor entries over " << signature.ranks.size()
      << " ranks\n";
  const Status written = signature_out.WriteAndClose(SignatureToJson(signature).dump(1) + "\n");
  if (!written.ok()) {
    err << "ckptspec layout: " << written.message() << "\n";
    return 2;
  }
  struct Check {
    const char* title;
    std::vector<Violation> violations;
  };
  const Check checks[] = {
      {"P4 sharding integrity", CheckShardingIntegrity(signature)},
      {"P5 key injectivity", CheckKeyInjectivity(signature)},
      {"P11 common state", CheckCommonState(signature)},
  };
  bool clean = true;
  for (const Check& check : checks) {
    out << check.title << ": ";
    if (check.violations.empty()) {
      out << "OK\n";
      continue;
    }
    clean = false;
    out << check.violations.size() << " violation(s)\n" << FormatViolations(check.violations);
  }
  return clean ? 0 : 1;
}

}  // namespace ckptspec
