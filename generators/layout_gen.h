// Generators of layouts and models that fit them (docs/DESIGN.md §8).
//
// Contracts:
//  - gen::LayoutAndModelUpTo yields a Layout and a ModelConfig with ValidateModelForLayout(...).ok(),
//    over every dimension (TP, PP, CP, DP, EP, expert-TP; rank orders with pp last; uneven
//    pipeline splits; dense, MoE and mixed dense/MoE models; tied and untied embeddings).
//  - Worlds are biased toward small sizes but reach `max_world` (64 and more); shrinking goes
//    toward world 1 and the smallest model, because every choice shrinks toward its first option.
//  - gen::LayoutFor yields another valid layout for the same model (a resume under a new layout).
//  - gen::Heterogeneous yields two named modules on disjoint rank ranges.
//  - gen::InvalidLayout yields sizes that break exactly one named rule and the text the error must
//    contain.
//  - Models are tiny (hidden 8 to 32): properties are about structure, not size.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "model/layout.h"
#include "model/model_config.h"

namespace ckptspec {

struct LayoutAndModel {
  Layout layout;
  ModelConfig model;
};

struct HeterogeneousCase {
  HeterogeneousLayout layout;
  std::vector<ModelConfig> models;  // one per module, same order as layout.modules()
};

struct InvalidLayoutCase {
  int64_t world = 1;
  ParallelSizes sizes;
  std::string order = "tp-cp-ep-dp-pp";
  std::string expected_error;  // a substring of the Status message
};

namespace gen {

rc::Gen<LayoutAndModel> LayoutAndModelUpTo(int max_world);
// A valid layout for `model`, world at most max_world. Precondition: one exists (world 1 always).
rc::Gen<Layout> LayoutFor(const ModelConfig& model, int max_world);
// A valid layout for `model` that differs from `from` in its DP size only (TP, PP, CP, EP, ETP and
// the rank order kept), world at most max_world; `from` itself when no other DP size fits. A
// direction other than kAny takes a DP size in that direction where one fits.
enum class DpDirection { kAny, kSmaller, kLarger };
rc::Gen<Layout> LayoutChangingOnlyDp(const ModelConfig& model, const Layout& from, int max_world,
                                     DpDirection direction = DpDirection::kAny);
rc::Gen<HeterogeneousCase> Heterogeneous(int max_world_per_module);
rc::Gen<InvalidLayoutCase> InvalidLayout();

}  // namespace gen

// Readable forms for RapidCheck's counterexample output (found by argument-dependent lookup).
void showValue(const Layout& layout, std::ostream& os);
void showValue(const ModelConfig& model, std::ostream& os);
void showValue(const LayoutAndModel& value, std::ostream& os);
void showValue(const HeterogeneousCase& value, std::ostream& os);
void showValue(const InvalidLayoutCase& value, std::ostream& os);

}  // namespace ckptspec
