#include "generators/layout_gen.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "generators/size_guard.h"
#include "generators/world_cap.h"
#include "model/describe.h"

namespace ckptspec {
namespace gen {
namespace {

// Every ParallelSizes with world <= max_world over the option sets below, valid as a Layout,
// ordered by world size (then by the order of the option lists), so that shrinking an index
// shrinks the world.
struct SizedLayout {
  int64_t world;
  ParallelSizes sizes;
  Layout layout;  // the sizes under the default rank order
};

std::vector<SizedLayout> AllLayouts(int max_world) {
  std::vector<SizedLayout> all;
  for (int64_t tp : {1, 2, 4, 8}) {
    for (int64_t pp : {1, 2, 3, 4}) {
      for (int64_t cp : {1, 2}) {
        for (int64_t dp = 1; tp * pp * cp * dp <= max_world; ++dp) {
          const int64_t world = tp * pp * cp * dp;
          for (int64_t etp : {int64_t{1}, tp}) {
            for (int64_t ep = 1; ep * etp * pp <= world; ++ep) {
              ParallelSizes sizes{tp, pp, dp, cp, ep, etp};
              Layout layout;
              if (!Layout::Make(world, sizes, RankOrder(), &layout).ok()) continue;
              all.push_back({world, sizes, layout});
            }
            if (tp == 1) break;  // etp options coincide
          }
        }
      }
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const SizedLayout& a, const SizedLayout& b) { return a.world < b.world; });
  return all;
}

RankOrder GenOrder() {
  // Mostly Megatron's default; sometimes another order of the first four tokens (pp stays last).
  std::vector<std::vector<ParallelDim>> orders;
  std::vector<ParallelDim> perm = {ParallelDim::kTP, ParallelDim::kCP, ParallelDim::kEP,
                                   ParallelDim::kDP};
  do {
    orders.push_back(perm);
    orders.back().push_back(ParallelDim::kPP);
  } while (std::next_permutation(perm.begin(), perm.end()));
  RankOrder order;
  if (*rc::gen::inRange(0, 4) == 0) {
    const auto dims = *rc::gen::elementOf(orders);
    std::copy(dims.begin(), dims.end(), order.dims.begin());
  }
  return order;
}

// A model fitting `sizes` (TP divides heads, query groups, ffn, vocab; layers fit PP; experts
// divide by EP; the expert ffn by expert-TP).
ModelConfig GenModelFor(const ParallelSizes& s) {
  ModelConfig m;
  const int tp = static_cast<int>(s.tp);
  const int pp = static_cast<int>(s.pp);
  const int etp = static_cast<int>(s.etp == 0 ? s.tp : s.etp);
  m.num_attention_heads = tp * *rc::gen::elementOf(std::vector<int>{1, 2});
  // Multi-head attention, or grouped-query attention with one group per TP rank.
  m.num_query_groups = *rc::gen::elementOf(std::vector<int>{0, tp});
  m.hidden_size = m.num_attention_heads * *rc::gen::elementOf(std::vector<int>{2, 4});
  m.ffn_hidden_size = tp * *rc::gen::elementOf(std::vector<int>{2, 4});
  m.vocab_size = tp * *rc::gen::elementOf(std::vector<int>{4, 8});
  if (pp >= 3 && *rc::gen::inRange(0, 3) == 0) {
    // Uneven: one layer on the first and last stages, more on the others.
    const int per_middle = *rc::gen::elementOf(std::vector<int>{1, 2});
    m.pipeline_split = {1, 1};
    m.num_layers = 2 + (pp - 2) * per_middle;
  } else {
    m.num_layers = pp * *rc::gen::elementOf(std::vector<int>{1, 2});
  }
  const bool moe = s.ep > 1 || *rc::gen::inRange(0, 4) == 0;
  if (moe) {
    m.num_experts = static_cast<int>(s.ep) * *rc::gen::elementOf(std::vector<int>{1, 2});
    m.moe_ffn_hidden_size = etp * *rc::gen::elementOf(std::vector<int>{2, 4});
    m.moe_layer_freq = *rc::gen::elementOf(std::vector<int>{1, 2});
  }
  m.tie_embeddings = *rc::gen::elementOf(std::vector<bool>{true, false});
  m.gated_linear_unit = *rc::gen::elementOf(std::vector<bool>{false, true});
  m.add_bias = *rc::gen::elementOf(std::vector<bool>{false, true});
  m.params_dtype = *rc::gen::elementOf(std::vector<DType>{DType::kBFloat16, DType::kFloat32});
  return m;
}

// AllLayouts(max_world), computed once per max_world for the process: a run generator draws a
// LayoutAndModelUpTo for every case (and module).
std::shared_ptr<const std::vector<SizedLayout>> AllLayoutsOnce(int max_world) {
  static std::mutex mu;
  static auto* computed = new std::map<int, std::shared_ptr<const std::vector<SizedLayout>>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& all = (*computed)[max_world];
  if (!all) all = std::make_shared<const std::vector<SizedLayout>>(AllLayouts(max_world));
  return all;
}

}  // namespace

rc::Gen<LayoutAndModel> LayoutAndModelUpTo(int max_world) {
  max_world = CappedWorld(max_world);
  std::shared_ptr<const std::vector<SizedLayout>> all = AllLayoutsOnce(max_world);
  return AtNonNegativeSize(rc::gen::exec([all] {
    // A world-size tier first (up to 4, 8, 16, ... up to max_world), then a layout within it: small
    // worlds are common, large ones reachable, and shrinking the tier shrinks the world.
    std::vector<size_t> tier_ends;  // all[0, tier_ends[t]) has world <= 4 * 2^t
    for (int64_t tier = 4;; tier *= 2) {
      const auto end =
          std::upper_bound(all->begin(), all->end(), tier,
                           [](int64_t w, const SizedLayout& l) { return w < l.world; });
      tier_ends.push_back(static_cast<size_t>(end - all->begin()));
      if (end == all->end()) break;
    }
    // inRange scales with RapidCheck's size (early cases small); the choice inside a tier is
    // uniform (resized to the full range).
    const size_t tier = *rc::gen::inRange<size_t>(0, tier_ends.size());
    const SizedLayout& chosen =
        (*all)[*rc::gen::resize(100, rc::gen::inRange<size_t>(0, tier_ends[tier]))];
    LayoutAndModel out;
    const RankOrder order = GenOrder();
    if (!Layout::Make(chosen.world, chosen.sizes, order, &out.layout).ok()) {
      // The order moved pp's stages apart for this expert split: keep the default order.
      out.layout = chosen.layout;
    }
    out.model = GenModelFor(chosen.sizes);
    return out;
  }));
}

rc::Gen<Layout> LayoutFor(const ModelConfig& model, int max_world) {
  max_world = CappedWorld(max_world);
  std::vector<Layout> fitting;
  for (const SizedLayout& candidate : *AllLayoutsOnce(max_world)) {
    if (ValidateModelForLayout(model, candidate.layout).ok()) fitting.push_back(candidate.layout);
  }
  auto shared = std::make_shared<std::vector<Layout>>(std::move(fitting));
  return AtNonNegativeSize(rc::gen::exec([shared] {
    if (shared->empty()) {
      RC_FAIL("no layout of the generator's option sets fits this model");
    }
    return (*shared)[*rc::gen::inRange<size_t>(0, shared->size())];
  }));
}

rc::Gen<Layout> LayoutChangingOnlyDp(const ModelConfig& model, const Layout& from, int max_world,
                                     DpDirection direction) {
  max_world = CappedWorld(max_world);
  const int64_t others = from.world_size() / from.dp();  // tp * cp * pp
  ParallelSizes sizes;
  sizes.tp = from.tp();
  sizes.pp = from.pp();
  sizes.cp = from.cp();
  sizes.ep = from.ep();
  sizes.etp = from.etp();
  std::vector<Layout> fitting;
  for (int64_t dp = 1; others * dp <= max_world; ++dp) {
    Layout layout;
    if (dp == from.dp() || !Layout::Make(others * dp, sizes, from.order(), &layout).ok()) continue;
    if (ValidateModelForLayout(model, layout).ok()) fitting.push_back(layout);
  }
  if (fitting.empty()) return rc::gen::just(from);
  std::vector<Layout> directed;
  for (const Layout& l : fitting) {
    if ((direction == DpDirection::kSmaller && l.dp() < from.dp()) ||
        (direction == DpDirection::kLarger && l.dp() > from.dp())) {
      directed.push_back(l);
    }
  }
  return rc::gen::elementOf(directed.empty() ? fitting : directed);
}

rc::Gen<HeterogeneousCase> Heterogeneous(int max_world_per_module) {
  max_world_per_module = CappedWorld(max_world_per_module);
  return AtNonNegativeSize(rc::gen::exec([max_world_per_module] {
    HeterogeneousCase out;
    std::vector<ModuleLayout> modules;
    int64_t next = 0;
    for (const char* name : {"vision", "language"}) {
      LayoutAndModel lm = *LayoutAndModelUpTo(max_world_per_module);
      lm.model.name = name;
      modules.push_back({name, next, lm.layout});
      next += lm.layout.world_size();
      out.models.push_back(lm.model);
    }
    const Status s = HeterogeneousLayout::Make(modules, &out.layout);
    if (!s.ok()) RC_FAIL("heterogeneous generator built an invalid layout: " + s.ToString());
    return out;
  }));
}

rc::Gen<InvalidLayoutCase> InvalidLayout() {
  return AtNonNegativeSize(rc::gen::exec([] {
    InvalidLayoutCase c;
    switch (*rc::gen::inRange(0, 6)) {
      case 0: {  // world not divisible by tp*cp*pp
        c.sizes.tp = *rc::gen::elementOf(std::vector<int64_t>{3, 5});
        c.world = c.sizes.tp * *rc::gen::inRange<int64_t>(1, 4) + 1;
        c.expected_error = "is not divisible by tp × cp × pp";
        break;
      }
      case 1: {  // explicit dp that does not multiply out
        c.sizes.tp = 2;
        c.sizes.dp = *rc::gen::inRange<int64_t>(2, 5);
        c.world = 2 * (c.sizes.dp + 1);
        c.expected_error = "does not equal world_size";
        break;
      }
      case 2: {  // ep does not divide dp*cp
        c.sizes.dp = 0;
        c.world = *rc::gen::elementOf(std::vector<int64_t>{4, 8});
        c.sizes.ep = 3;
        c.expected_error = "ep = 3 does not divide dp × cp";
        break;
      }
      case 3: {  // a zero or negative size
        c.world = 4;
        c.sizes.pp = *rc::gen::elementOf(std::vector<int64_t>{0, -1});
        c.expected_error = "pp = ";
        break;
      }
      case 4: {  // a bad rank order
        c.world = 2;
        c.order = *rc::gen::elementOf(std::vector<std::string>{"tp-xp-dp", "tp-tp", "tp--dp"});
        c.expected_error = "rank order";
        break;
      }
      default: {  // world out of range
        c.world = *rc::gen::elementOf(std::vector<int64_t>{0, -4, (int64_t{1} << 31) + 1});
        c.expected_error = "world_size = ";
        break;
      }
    }
    return c;
  }));
}

}  // namespace gen

void showValue(const Layout& layout, std::ostream& os) { os << layout.ToString(); }
void showValue(const ModelConfig& model, std::ostream& os) { os << DescribeModel(model); }
void showValue(const LayoutAndModel& v, std::ostream& os) {
  os << v.layout.ToString() << "; model " << DescribeModel(v.model);
}
void showValue(const HeterogeneousCase& v, std::ostream& os) {
  for (size_t i = 0; i < v.models.size(); ++i) {
    const ModuleLayout& m = v.layout.modules()[i];
    os << (i ? "; " : "") << "module '" << m.name << "' ranks [" << m.first_rank << ", "
       << m.end_rank() << "): " << m.layout.ToString() << ", model " << DescribeModel(v.models[i]);
  }
}
void showValue(const InvalidLayoutCase& v, std::ostream& os) {
  os << "world " << v.world << ", tp " << v.sizes.tp << ", pp " << v.sizes.pp << ", dp "
     << v.sizes.dp << ", cp " << v.sizes.cp << ", ep " << v.sizes.ep << ", etp " << v.sizes.etp
     << ", order '" << v.order << "' (expect: " << v.expected_error << ")";
}

}  // namespace ckptspec
