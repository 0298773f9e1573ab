#include "cli/layout_command.h"

#include <fstream>
#include <map>

#include "model/param_sharding.h"
#include "model/signature_json.h"
#include "model/validate.h"

namespace ckptspec {

CLI::App* AddLayoutCommand(CLI::App& app, LayoutOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "layout", "Build a layout and a model from flags, shard the parameters canonically and "
                "print the validation report (P4, P5, P11)");
  cmd->add_option("--world", o->world, "world size (default: tp*cp*pp*max(dp,1))");
  cmd->add_option("--tp", o->sizes.tp, "tensor parallel size")->capture_default_str();
  cmd->add_option("--pp", o->sizes.pp, "pipeline parallel size")->capture_default_str();
  cmd->add_option("--dp", o->sizes.dp, "data parallel size (0: derived from world)")->capture_default_str();
  cmd->add_option("--cp", o->sizes.cp, "context parallel size")->capture_default_str();
  cmd->add_option("--ep", o->sizes.ep, "expert parallel size")->capture_default_str();
  cmd->add_option("--etp", o->sizes.etp, "expert tensor parallel size (0: same as tp)")->capture_default_str();
  cmd->add_option("--order", o->order, "rank order, first token fastest")->capture_default_str();
  cmd->add_option("--layers", o->model.num_layers, "number of transformer layers")->capture_default_str();
  cmd->add_option("--hidden", o->model.hidden_size, "hidden size")->capture_default_str();
  cmd->add_option("--heads", o->model.num_attention_heads, "attention heads")->capture_default_str();
  cmd->add_option("--query-groups", o->model.num_query_groups, "query groups (0: one per head)")->capture_default_str();
  cmd->add_option("--ffn", o->model.ffn_hidden_size, "ffn hidden size (0: 4*hidden)")->capture_default_str();
  cmd->add_option("--vocab", o->model.vocab_size, "vocabulary size")->capture_default_str();
  cmd->add_option("--experts", o->model.num_experts, "MoE experts (0: dense)")->capture_default_str();
  cmd->add_option("--moe-ffn", o->model.moe_ffn_hidden_size, "expert ffn size (0: ffn)")->capture_default_str();
  cmd->add_option("--moe-layer-freq", o->model.moe_layer_freq, "every k-th layer is MoE")->capture_default_str();
  cmd->add_flag("--glu", o->model.gated_linear_unit, "gated linear unit (fc1 is 2*ffn)");
  cmd->add_flag("--bias", o->model.add_bias, "linear layers have biases");
  cmd->add_flag("!--untied", o->model.tie_embeddings, "untie the output layer from the embedding");
  cmd->add_option("--first-stage-layers", o->model.pipeline_split.first_stage_layers,
                  "layers on the first pipeline stage (-1: even split)")->capture_default_str();
  cmd->add_option("--last-stage-layers", o->model.pipeline_split.last_stage_layers,
                  "layers on the last pipeline stage (-1: even split)")->capture_default_str();
  cmd->add_option("--module", o->modules,
                  "heterogeneous module 'name:key=value,...' (keys: world tp pp dp cp ep etp "
                  "layers hidden heads groups ffn vocab experts); repeat per module, in rank order");
  cmd->add_option("--rank", o->show_rank, "print this global rank's coordinates and groups");
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
  if (name->empty()) return Status::InvalidArgument("--module '" + spec + "': missing name before ':'");
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
    int64_t value = 0;
    try {
      size_t used = 0;
      value = std::stoll(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      return Status::InvalidArgument("--module '" + spec + "': " + key + " = '" + text +
                                     "' is not an integer");
    }
    const std::map<std::string, int64_t*> sizes_by_key = {
        {"world", world},    {"tp", &sizes->tp}, {"pp", &sizes->pp},  {"dp", &sizes->dp},
        {"cp", &sizes->cp},  {"ep", &sizes->ep}, {"etp", &sizes->etp}};
    const std::map<std::string, int*> model_by_key = {
        {"layers", &model->num_layers},          {"hidden", &model->hidden_size},
        {"heads", &model->num_attention_heads},  {"groups", &model->num_query_groups},
        {"ffn", &model->ffn_hidden_size},        {"vocab", &model->vocab_size},
        {"experts", &model->num_experts}};
    if (auto it = sizes_by_key.find(key); it != sizes_by_key.end()) {
      *it->second = value;
    } else if (auto mit = model_by_key.find(key); mit != model_by_key.end()) {
      if (value < INT32_MIN || value > INT32_MAX) {
        return Status::InvalidArgument("--module '" + spec + "': " + key + " = " + text +
                                       " is out of range");
      }
      *mit->second = static_cast<int>(value);
    } else {
      return Status::InvalidArgument("--module '" + spec + "': unknown key '" + key + "'");
    }
  }
  return Status::OK();
}

namespace {

int64_t DefaultWorld(const ParallelSizes& s) { return s.tp * s.cp * s.pp * std::max<int64_t>(s.dp, 1); }

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
    for (int64_t member : module.layout.Group(kind, local)) out << " " << member + module.first_rank;
    out << "\n";
  }
}

}  // namespace

int RunLayoutCommand(const LayoutOptions& o, std::ostream& out, std::ostream& err) {
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
  if (!o.signature_out.empty()) {
    std::ofstream file(o.signature_out);
    file << SignatureToJson(signature).dump(1) << "\n";
    if (!file) {
      err << "ckptspec layout: cannot write --signature-out '" << o.signature_out << "'\n";
      return 2;
    }
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
