#include "model/layout.h"

#include <algorithm>

namespace ckptspec {

namespace {

constexpr int Idx(ParallelDim d) { return static_cast<int>(d); }
std::string Str(int64_t v) { return std::to_string(v); }

}  // namespace

const char* ParallelDimName(ParallelDim dim) {
  switch (dim) {
    case ParallelDim::kTP:
      return "tp";
    case ParallelDim::kCP:
      return "cp";
    case ParallelDim::kEP:
      return "ep";
    case ParallelDim::kDP:
      return "dp";
    case ParallelDim::kPP:
      return "pp";
  }
  return "?";
}

const char* GroupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTensor:
      return "tp";
    case GroupKind::kPipeline:
      return "pp";
    case GroupKind::kData:
      return "dp";
    case GroupKind::kContext:
      return "cp";
    case GroupKind::kDataContext:
      return "dp-cp";
    case GroupKind::kModel:
      return "mp";
    case GroupKind::kExpert:
      return "ep";
    case GroupKind::kExpertTensor:
      return "etp";
    case GroupKind::kExpertData:
      return "edp";
  }
  return "?";
}

Status RankOrder::Parse(const std::string& text, RankOrder* out) {
  std::vector<ParallelDim> dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('-', start), text.size());
    const std::string token = text.substr(start, end - start);
    bool found = false;
    for (int i = 0; i < kNumParallelDims; ++i) {
      const auto dim = static_cast<ParallelDim>(i);
      if (token == ParallelDimName(dim)) {
        if (std::find(dims.begin(), dims.end(), dim) != dims.end()) {
          return Status::InvalidArgument("rank order '" + text + "' repeats token '" + token + "'");
        }
        dims.push_back(dim);
        found = true;
      }
    }
    if (!found) {
      return Status::InvalidArgument("rank order '" + text + "': unknown token '" + token +
                                     "' (expected tp, cp, ep, dp, pp joined by '-')");
    }
    start = end + 1;
  }
  for (ParallelDim d : RankOrder().dims) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) dims.push_back(d);
  }
  std::copy(dims.begin(), dims.end(), out->dims.begin());
  return Status::OK();
}

std::string RankOrder::ToString() const {
  std::string s;
  for (int i = 0; i < kNumParallelDims; ++i) {
    if (i) s += "-";
    s += ParallelDimName(dims[i]);
  }
  return s;
}

Layout::Sizes Layout::StridesOf(const Sizes& sizes) const {
  Sizes strides{};
  int64_t stride = 1;
  for (ParallelDim d : order_.dims) {
    strides[Idx(d)] = stride;
    stride *= sizes[Idx(d)];
  }
  return strides;
}

Status Layout::Make(int64_t world_size, const ParallelSizes& s, const RankOrder& order,
                    Layout* out) {
  if (world_size < 1 || world_size > (int64_t{1} << 31)) {
    return Status::InvalidArgument("world_size = " + Str(world_size) + " must be in [1, 2^31]");
  }
  struct Named {
    const char* name;
    int64_t value;
    bool zero_means_default;
  };
  for (const Named& n :
       {Named{"tp", s.tp, false}, Named{"pp", s.pp, false}, Named{"dp", s.dp, true},
        Named{"cp", s.cp, false}, Named{"ep", s.ep, false}, Named{"etp", s.etp, true}}) {
    if (n.value < 0 || (n.value == 0 && !n.zero_means_default) || n.value > world_size) {
      return Status::InvalidArgument(std::string(n.name) + " = " + Str(n.value) +
                                     " must be in [1, world_size = " + Str(world_size) + "]");
    }
  }
  const int64_t model = s.tp * s.cp * s.pp;
  if (model > world_size || world_size % model != 0) {
    return Status::InvalidArgument("world_size = " + Str(world_size) +
                                   " is not divisible by tp × cp × pp = " + Str(s.tp) + " × " +
                                   Str(s.cp) + " × " + Str(s.pp) + " = " + Str(model));
  }
  const int64_t dp = world_size / model;
  if (s.dp != 0 && s.dp != dp) {
    return Status::InvalidArgument("tp × cp × dp × pp = " + Str(s.tp) + " × " + Str(s.cp) + " × " +
                                   Str(s.dp) + " × " + Str(s.pp) + " = " + Str(model * s.dp) +
                                   " does not equal world_size = " + Str(world_size));
  }
  const int64_t etp = s.etp == 0 ? s.tp : s.etp;
  const int64_t expert_model = etp * s.ep * s.pp;
  if (expert_model > world_size || world_size % expert_model != 0) {
    if (etp == s.tp) {
      return Status::InvalidArgument("ep = " + Str(s.ep) + " does not divide dp × cp = " + Str(dp) +
                                     " × " + Str(s.cp) + " = " + Str(dp * s.cp));
    }
    return Status::InvalidArgument("etp × ep × pp = " + Str(etp) + " × " + Str(s.ep) + " × " +
                                   Str(s.pp) + " = " + Str(expert_model) +
                                   " does not divide world_size = " + Str(world_size));
  }
  Layout layout;
  layout.world_size_ = world_size;
  layout.order_ = order;
  layout.dense_sizes_ = {s.tp, s.cp, 1, dp, s.pp};
  layout.expert_sizes_ = {etp, 1, s.ep, world_size / expert_model, s.pp};
  layout.dense_strides_ = layout.StridesOf(layout.dense_sizes_);
  layout.expert_strides_ = layout.StridesOf(layout.expert_sizes_);
  // Both decompositions must agree on every rank's pipeline stage (Megatron asserts that the pp
  // groups are identical). With pp last in the order this always holds.
  if (s.pp > 1 && order.dims[kNumParallelDims - 1] != ParallelDim::kPP) {
    for (int64_t rank = 0; rank < world_size; ++rank) {
      const int64_t dense_pp =
          layout.CoordOf(layout.dense_sizes_, layout.dense_strides_, ParallelDim::kPP, rank);
      const int64_t expert_pp =
          layout.CoordOf(layout.expert_sizes_, layout.expert_strides_, ParallelDim::kPP, rank);
      if (dense_pp != expert_pp) {
        return Status::InvalidArgument(
            "rank order " + order.ToString() + " puts rank " + Str(rank) + " on pipeline stage " +
            Str(dense_pp) + " in the dense decomposition but stage " + Str(expert_pp) +
            " in the expert one (etp=" + Str(etp) + ", ep=" + Str(s.ep) + "); put pp last");
      }
    }
  }
  *out = layout;
  return Status::OK();
}

int64_t Layout::CoordOf(const Sizes& sizes, const Sizes& strides, ParallelDim dim,
                        int64_t rank) const {
  return (rank / strides[Idx(dim)]) % sizes[Idx(dim)];
}

RankCoords Layout::Coords(int64_t rank) const {
  RankCoords c;
  c.tp = CoordOf(dense_sizes_, dense_strides_, ParallelDim::kTP, rank);
  c.cp = CoordOf(dense_sizes_, dense_strides_, ParallelDim::kCP, rank);
  c.dp = CoordOf(dense_sizes_, dense_strides_, ParallelDim::kDP, rank);
  c.pp = CoordOf(dense_sizes_, dense_strides_, ParallelDim::kPP, rank);
  c.dp_cp = GroupRank(GroupKind::kDataContext, rank);
  c.etp = CoordOf(expert_sizes_, expert_strides_, ParallelDim::kTP, rank);
  c.ep = CoordOf(expert_sizes_, expert_strides_, ParallelDim::kEP, rank);
  c.edp = CoordOf(expert_sizes_, expert_strides_, ParallelDim::kDP, rank);
  return c;
}

int64_t Layout::DenseRank(int64_t tp, int64_t cp, int64_t dp, int64_t pp) const {
  return tp * dense_strides_[Idx(ParallelDim::kTP)] + cp * dense_strides_[Idx(ParallelDim::kCP)] +
         dp * dense_strides_[Idx(ParallelDim::kDP)] + pp * dense_strides_[Idx(ParallelDim::kPP)];
}

bool Layout::IsExpertGroup(GroupKind kind) const {
  return kind == GroupKind::kExpert || kind == GroupKind::kExpertTensor ||
         kind == GroupKind::kExpertData;
}

std::array<bool, kNumParallelDims> Layout::MaskOf(GroupKind kind) const {
  std::array<bool, kNumParallelDims> mask{};
  switch (kind) {
    case GroupKind::kTensor:
      mask[Idx(ParallelDim::kTP)] = true;
      break;
    case GroupKind::kPipeline:
      mask[Idx(ParallelDim::kPP)] = true;
      break;
    case GroupKind::kData:
      mask[Idx(ParallelDim::kDP)] = true;
      break;
    case GroupKind::kContext:
      mask[Idx(ParallelDim::kCP)] = true;
      break;
    case GroupKind::kDataContext:
      mask[Idx(ParallelDim::kDP)] = true;
      mask[Idx(ParallelDim::kCP)] = true;
      break;
    case GroupKind::kModel:
      mask[Idx(ParallelDim::kTP)] = true;
      mask[Idx(ParallelDim::kPP)] = true;
      break;
    case GroupKind::kExpert:
      mask[Idx(ParallelDim::kEP)] = true;
      break;
    case GroupKind::kExpertTensor:
      mask[Idx(ParallelDim::kTP)] = true;
      break;
    case GroupKind::kExpertData:
      mask[Idx(ParallelDim::kDP)] = true;
      break;
  }
  return mask;
}

int64_t Layout::GroupSize(GroupKind kind) const {
  const Sizes& sizes = IsExpertGroup(kind) ? expert_sizes_ : dense_sizes_;
  const auto mask = MaskOf(kind);
  int64_t size = 1;
  for (int i = 0; i < kNumParallelDims; ++i) {
    if (mask[i]) size *= sizes[i];
  }
  return size;
}

int64_t Layout::GroupRank(GroupKind kind, int64_t rank) const {
  const bool expert = IsExpertGroup(kind);
  const Sizes& sizes = expert ? expert_sizes_ : dense_sizes_;
  const Sizes& strides = expert ? expert_strides_ : dense_strides_;
  const auto mask = MaskOf(kind);
  int64_t position = 0;
  int64_t scale = 1;
  for (ParallelDim d : order_.dims) {
    if (!mask[Idx(d)]) continue;
    position += CoordOf(sizes, strides, d, rank) * scale;
    scale *= sizes[Idx(d)];
  }
  return position;
}

std::vector<int64_t> Layout::Group(GroupKind kind, int64_t rank) const {
  const bool expert = IsExpertGroup(kind);
  const Sizes& sizes = expert ? expert_sizes_ : dense_sizes_;
  const Sizes& strides = expert ? expert_strides_ : dense_strides_;
  const auto mask = MaskOf(kind);
  // The base rank: `rank` with every varied coordinate zeroed.
  int64_t base = rank;
  for (int i = 0; i < kNumParallelDims; ++i) {
    if (mask[i]) base -= CoordOf(sizes, strides, static_cast<ParallelDim>(i), rank) * strides[i];
  }
  std::vector<int64_t> group(GroupSize(kind));
  for (int64_t position = 0; position < static_cast<int64_t>(group.size()); ++position) {
    int64_t member = base;
    int64_t rest = position;
    for (ParallelDim d : order_.dims) {
      if (!mask[Idx(d)]) continue;
      member += (rest % sizes[Idx(d)]) * strides[Idx(d)];
      rest /= sizes[Idx(d)];
    }
    group[position] = member;
  }
  return group;
}

std::string Layout::ToString() const {
  return "world " + Str(world_size_) + ": tp" + Str(tp()) + " cp" + Str(cp()) + " dp" + Str(dp()) +
         " pp" + Str(pp()) + " | ep" + Str(ep()) + " etp" + Str(etp()) + " edp" + Str(edp()) +
         " | order " + order_.ToString();
}

Status PipelineStages::Make(const ModelConfig& config, int64_t pp, PipelineStages* out) {
  const int64_t layers = config.num_layers;
  const PipelineSplit& split = config.pipeline_split;
  const bool uneven = split.first_stage_layers >= 0 || split.last_stage_layers >= 0;
  if (pp < 1) return Status::InvalidArgument("pp = " + Str(pp) + " must be >= 1");
  PipelineStages stages;
  stages.first_layer_.assign(pp + 1, 0);
  if (!uneven) {
    if (layers % pp != 0) {
      return Status::InvalidArgument(
          "num_layers = " + Str(layers) + " is not divisible by pp = " + Str(pp) +
          " (set pipeline_split.first_stage_layers / last_stage_layers for an uneven split)");
    }
    for (int64_t s = 0; s <= pp; ++s) stages.first_layer_[s] = s * (layers / pp);
    *out = std::move(stages);
    return Status::OK();
  }
  if (pp == 1) {
    return Status::InvalidArgument("pipeline_split sets first/last stage layers but pp = 1");
  }
  const int64_t first = split.first_stage_layers;
  const int64_t last = split.last_stage_layers;
  const int64_t middle_stages = pp - (first >= 0 ? 1 : 0) - (last >= 0 ? 1 : 0);
  const int64_t middle_layers = layers - std::max<int64_t>(first, 0) - std::max<int64_t>(last, 0);
  if (middle_layers < 0) {
    return Status::InvalidArgument(
        "pipeline_split: first + last stage layers exceed num_layers = " + Str(layers));
  }
  if (middle_stages == 0 ? middle_layers != 0 : middle_layers % middle_stages != 0) {
    return Status::InvalidArgument("pipeline_split: the " + Str(middle_layers) +
                                   " layers left for the other " + Str(middle_stages) +
                                   " stages do not divide evenly (num_layers = " + Str(layers) +
                                   ", pp = " + Str(pp) + ")");
  }
  const int64_t per_middle = middle_stages == 0 ? 0 : middle_layers / middle_stages;
  int64_t next = 0;
  for (int64_t s = 0; s < pp; ++s) {
    stages.first_layer_[s] = next;
    if (s == 0 && first >= 0) {
      next += first;
    } else if (s == pp - 1 && last >= 0) {
      next += last;
    } else {
      next += per_middle;
    }
  }
  stages.first_layer_[pp] = next;
  *out = std::move(stages);
  return Status::OK();
}

int64_t PipelineStages::StageOfLayer(int64_t layer) const {
  // The last stage whose first layer is <= layer and that holds layers.
  const auto it = std::upper_bound(first_layer_.begin(), first_layer_.end() - 1, layer);
  int64_t stage = static_cast<int64_t>(it - first_layer_.begin()) - 1;
  while (stage > 0 && num_layers(stage) == 0) --stage;
  return stage;
}

Status ValidateModelForLayout(const ModelConfig& c, const Layout& layout) {
  CKPTSPEC_RETURN_IF_ERROR(ValidateModelConfig(c));
  auto divisible = [](const char* field, int64_t value, const char* dim, int64_t size) {
    if (value % size == 0) return Status::OK();
    return Status::InvalidArgument(std::string(field) + " = " + Str(value) +
                                   " is not divisible by " + dim + " = " + Str(size));
  };
  CKPTSPEC_RETURN_IF_ERROR(
      divisible("num_attention_heads", c.num_attention_heads, "tp", layout.tp()));
  CKPTSPEC_RETURN_IF_ERROR(divisible("num_query_groups", c.query_groups(), "tp", layout.tp()));
  CKPTSPEC_RETURN_IF_ERROR(divisible("ffn_hidden_size", c.ffn(), "tp", layout.tp()));
  CKPTSPEC_RETURN_IF_ERROR(divisible("vocab_size", c.vocab_size, "tp", layout.tp()));
  PipelineStages stages;
  CKPTSPEC_RETURN_IF_ERROR(PipelineStages::Make(c, layout.pp(), &stages));
  if (c.num_experts == 0) {
    if (layout.ep() > 1) {
      return Status::InvalidArgument("ep = " + Str(layout.ep()) +
                                     " but the model has no experts (num_experts = 0)");
    }
  } else {
    CKPTSPEC_RETURN_IF_ERROR(divisible("num_experts", c.num_experts, "ep", layout.ep()));
    CKPTSPEC_RETURN_IF_ERROR(divisible("moe_ffn_hidden_size", c.moe_ffn(), "etp", layout.etp()));
  }
  return Status::OK();
}

Status HeterogeneousLayout::Make(std::vector<ModuleLayout> modules, HeterogeneousLayout* out) {
  if (modules.empty()) return Status::InvalidArgument("heterogeneous layout has no modules");
  for (size_t i = 0; i < modules.size(); ++i) {
    if (modules.size() > 1 && modules[i].name.empty()) {
      return Status::InvalidArgument("module " + Str(i) + " has no name (required with " +
                                     Str(modules.size()) + " modules)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (modules[i].name == modules[j].name) {
        return Status::InvalidArgument("module name '" + modules[i].name + "' is used twice");
      }
    }
    if (modules[i].first_rank < 0) {
      return Status::InvalidArgument("module '" + modules[i].name + "' starts at rank " +
                                     Str(modules[i].first_rank));
    }
  }
  std::sort(modules.begin(), modules.end(), [](const ModuleLayout& a, const ModuleLayout& b) {
    return a.first_rank < b.first_rank;
  });
  int64_t next = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const ModuleLayout& m = modules[i];
    auto range = [](const ModuleLayout& x) {
      return "[" + Str(x.first_rank) + ", " + Str(x.end_rank()) + ")";
    };
    if (m.first_rank < next) {
      return Status::InvalidArgument("module '" + m.name + "' ranks " + range(m) +
                                     " overlap module '" + modules[i - 1].name + "' ranks " +
                                     range(modules[i - 1]));
    }
    if (m.first_rank > next) {
      return Status::InvalidArgument("ranks [" + Str(next) + ", " + Str(m.first_rank) +
                                     ") belong to no module");
    }
    next = m.end_rank();
  }
  HeterogeneousLayout layout;
  layout.modules_ = std::move(modules);
  layout.world_size_ = next;
  *out = std::move(layout);
  return Status::OK();
}

HeterogeneousLayout HeterogeneousLayout::Single(const Layout& layout, const std::string& name) {
  HeterogeneousLayout h;
  h.modules_.push_back(ModuleLayout{name, 0, layout});
  h.world_size_ = layout.world_size();
  return h;
}

int HeterogeneousLayout::ModuleOf(int64_t rank) const {
  for (size_t i = 0; i < modules_.size(); ++i) {
    if (rank < modules_[i].end_rank()) return static_cast<int>(i);
  }
  return static_cast<int>(modules_.size()) - 1;
}

}  // namespace ckptspec
