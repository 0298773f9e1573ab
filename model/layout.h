// Parallel layouts: how a world of ranks is split into TP, CP, EP, DP and PP (and expert-TP), the
// coordinates of each rank and the groups it belongs to, following Megatron-core's RankGenerator.
//
// Two decompositions share one rank order (default "tp-cp-ep-dp-pp", first token fastest):
//  - dense:  sizes (tp, cp, ep = 1, dp, pp), dp = world / (tp · cp · pp);
//  - expert: sizes (etp, cp = 1, ep, edp, pp), edp = world / (etp · ep · pp).
// A rank's coordinate along a token is (rank / stride) % size, with strides the prefix products
// of the sizes in order. A group "varies" some tokens and fixes the rest; the rank's position in
// its group decomposes over the varied tokens in order (so the dp-cp rank is cp + cp_size · dp
// for the default order). Both decompositions must place every rank on the same pipeline stage.
//
// Validation never asserts: Layout::Make returns a Status naming the field and the value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/status.h"

namespace ckptspec {

enum class ParallelDim : uint8_t { kTP = 0, kCP = 1, kEP = 2, kDP = 3, kPP = 4 };
inline constexpr int kNumParallelDims = 5;
const char* ParallelDimName(ParallelDim dim);  // "tp", "cp", "ep", "dp", "pp"

// A permutation of the five tokens; the first varies fastest with the global rank.
struct RankOrder {
  std::array<ParallelDim, kNumParallelDims> dims = {
      ParallelDim::kTP, ParallelDim::kCP, ParallelDim::kEP, ParallelDim::kDP, ParallelDim::kPP};
  // Parses "tp-cp-ep-dp-pp"-style strings. Tokens not named are appended in the default order
  // (Megatron does the same). Unknown or repeated tokens are errors.
  static Status Parse(const std::string& text, RankOrder* out);
  std::string ToString() const;
  bool operator==(const RankOrder& o) const { return dims == o.dims; }
};

struct ParallelSizes {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 0;  // 0: derived as world / (tp · cp · pp)
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t etp = 0;  // expert tensor parallel; 0: same as tp
};

// A rank's coordinates in both decompositions.
struct RankCoords {
  int64_t tp = 0, cp = 0, dp = 0, pp = 0;  // dense
  int64_t dp_cp = 0;                       // position in the dp-cp group
  int64_t etp = 0, ep = 0, edp = 0;        // expert
  bool operator==(const RankCoords& o) const {
    return tp == o.tp && cp == o.cp && dp == o.dp && pp == o.pp && dp_cp == o.dp_cp &&
           etp == o.etp && ep == o.ep && edp == o.edp;
  }
};

enum class GroupKind : uint8_t {
  kTensor,        // tp
  kPipeline,      // pp
  kData,          // dp
  kContext,       // cp
  kDataContext,   // dp-cp: the group parameters are replicated over
  kModel,         // tp-pp: model parallel
  kExpert,        // ep (expert decomposition)
  kExpertTensor,  // etp
  kExpertData,    // edp: the group expert parameters are replicated over
};
const char* GroupKindName(GroupKind kind);  // "tp", "pp", "dp", "cp", "dp-cp", "mp", "ep", ...

class Layout {
 public:
  Layout() = default;

  // Validates and builds. Errors (InvalidArgument) name the sizes involved: a size < 1, world not
  // divisible by tp·cp·pp, tp·cp·dp·pp ≠ world, ep·etp·pp not dividing world (stated as "ep does
  // not divide dp × cp" when etp = tp), dense and expert decompositions disagreeing on pipeline
  // stages, world_size above 2^31.
  static Status Make(int64_t world_size, const ParallelSizes& sizes, const RankOrder& order,
                     Layout* out);

  int64_t world_size() const { return world_size_; }
  int64_t tp() const { return dense_sizes_[0]; }
  int64_t cp() const { return dense_sizes_[1]; }
  int64_t dp() const { return dense_sizes_[3]; }
  int64_t pp() const { return dense_sizes_[4]; }
  int64_t ep() const { return expert_sizes_[2]; }
  int64_t etp() const { return expert_sizes_[0]; }
  int64_t edp() const { return expert_sizes_[3]; }
  const RankOrder& order() const { return order_; }

  // Precondition: 0 <= rank < world_size().
  RankCoords Coords(int64_t rank) const;
  // The rank at dense coordinates (tp, cp, dp, pp).
  int64_t DenseRank(int64_t tp, int64_t cp, int64_t dp, int64_t pp) const;

  int64_t GroupSize(GroupKind kind) const;
  // The ranks of `rank`'s group, in group order (position i holds group rank i).
  std::vector<int64_t> Group(GroupKind kind, int64_t rank) const;
  // `rank`'s position in its group.
  int64_t GroupRank(GroupKind kind, int64_t rank) const;

  // "world 16: tp2 cp1 dp4 pp2 | ep2 etp2 edp2 | order tp-cp-ep-dp-pp".
  std::string ToString() const;

 private:
  // Per-token sizes in ParallelDim index order (tp, cp, ep, dp, pp) for each decomposition.
  using Sizes = std::array<int64_t, kNumParallelDims>;
  Sizes StridesOf(const Sizes& sizes) const;
  int64_t CoordOf(const Sizes& sizes, const Sizes& strides, ParallelDim dim, int64_t rank) const;
  // mask: which tokens vary in the group, indexed by ParallelDim.
  bool IsExpertGroup(GroupKind kind) const;
  std::array<bool, kNumParallelDims> MaskOf(GroupKind kind) const;

  int64_t world_size_ = 1;
  RankOrder order_;
  Sizes dense_sizes_{1, 1, 1, 1, 1};
  Sizes expert_sizes_{1, 1, 1, 1, 1};
  Sizes dense_strides_{1, 1, 1, 1, 1};
  Sizes expert_strides_{1, 1, 1, 1, 1};
};

// The layers each pipeline stage holds.
class PipelineStages {
 public:
  // Splits config.num_layers over `pp` stages per config.pipeline_split. Errors: layers not
  // divisible by PP (even split), the remaining layers not divisible by the middle stages, a
  // stage left without layers when that is not allowed, first/last counts given with pp = 1.
  static Status Make(const ModelConfig& config, int64_t pp, PipelineStages* out);

  int64_t num_stages() const { return static_cast<int64_t>(first_layer_.size()) - 1; }
  int64_t first_layer(int64_t stage) const { return first_layer_[stage]; }
  int64_t num_layers(int64_t stage) const { return first_layer_[stage + 1] - first_layer_[stage]; }
  // The stage that owns `layer` (0 <= layer < total layers).
  int64_t StageOfLayer(int64_t layer) const;

 private:
  std::vector<int64_t> first_layer_{0, 0};  // stage s holds [first_layer_[s], first_layer_[s+1])
};

// Checks a model against a layout: heads and query groups divisible by TP, ffn and vocab
// divisible by TP, the pipeline split, experts divisible by EP, the expert ffn by expert-TP, and
// EP > 1 only with experts. Errors name the model field, the parallel size and both values.
Status ValidateModelForLayout(const ModelConfig& config, const Layout& layout);

// A heterogeneous (non-colocated) layout: modules such as a vision encoder and a language model,
// each on its own contiguous rank range with its own parallel sizes.
struct ModuleLayout {
  std::string name;
  int64_t first_rank = 0;
  Layout layout;  // world_size() is the module's rank count
  int64_t end_rank() const { return first_rank + layout.world_size(); }
};

class HeterogeneousLayout {
 public:
  // Errors: no modules, empty or repeated names (only a single module may be unnamed), rank
  // ranges that overlap or leave ranks to no module (each named with its range).
  static Status Make(std::vector<ModuleLayout> modules, HeterogeneousLayout* out);
  // A one-module layout covering the whole world.
  static HeterogeneousLayout Single(const Layout& layout, const std::string& name = "");

  int64_t world_size() const { return world_size_; }
  const std::vector<ModuleLayout>& modules() const { return modules_; }
  // Index of the module that owns `rank` (0 <= rank < world_size()).
  int ModuleOf(int64_t rank) const;
  // `rank`'s rank inside its module's layout.
  int64_t LocalRank(int64_t rank) const { return rank - modules_[ModuleOf(rank)].first_rank; }

 private:
  std::vector<ModuleLayout> modules_;  // sorted by first_rank
  int64_t world_size_ = 0;
};

}  // namespace ckptspec
