// `ckptspec layout`: builds a layout (homogeneous, or heterogeneous with --module) and a model
// from flags, shards the model's parameters canonically, and prints the validation report
// (P4 sharding integrity, P5 key injectivity, P11 common state).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/layout.h"
#include "model/model_config.h"
#include "model/status.h"

namespace ckptspec {

// Everything the flags set. Defaults give a small valid dense model.
struct LayoutOptions {
  int64_t world = 0;  // 0: tp · cp · pp · max(dp, 1)
  ParallelSizes sizes;
  std::string order = "tp-cp-ep-dp-pp";
  ModelConfig model;
  // Heterogeneous modules: "name:key=value,..." with keys world, tp, pp, dp, cp, ep, etp, layers,
  // hidden, heads, groups, ffn, vocab, experts; unset keys inherit the flags above.
  std::vector<std::string> modules;
  int64_t show_rank = -1;     // print this rank's coordinates and groups
  std::string signature_out;  // write the signature (plan dump) JSON here
};

// Registers the subcommand and its flags on `app`; `options` must outlive parsing.
CLI::App* AddLayoutCommand(CLI::App& app, LayoutOptions* options);

// Exit codes: 0 valid and no violation; 1 the sharding has violations; 2 invalid input (a number
// outside its flag's range, an invalid layout or model) or a --signature-out that cannot be
// opened (checked before any work) or written.
int RunLayoutCommand(const LayoutOptions& options, std::ostream& out, std::ostream& err);

// Parses one --module spec over the defaults in `options`. Errors name the spec and the key.
Status ParseModuleSpec(const std::string& spec, const LayoutOptions& options, std::string* name,
                       int64_t* world, ParallelSizes* sizes, ModelConfig* model);

}  // namespace ckptspec
