// A GPT-like model and the list of its parameters, as Megatron-core names and shapes them.
//
// Each ParameterSpec is one logical parameter tensor (one layer's, one expert's). Its checkpoint
// `key` is shared by all layers (and experts) of the same kind: Megatron stacks homogeneous layers
// along a prepended layer axis and experts along a prepended expert axis (docs/SEMANTICS.md §2), so
// "decoder.layers.mlp.linear_fc1.weight" has global shape (num_layers, ffn, hidden). When dense and
// MoE layers mix (moe_layer_freq > 1), layers are not homogeneous and every layer gets its own
// key "decoder.layers.{i}.…" without a layer axis.
#pragma once

#include <string>
#include <vector>

#include "model/box.h"
#include "model/dtype.h"
#include "model/status.h"

namespace ckptspec {

// How layers are spread over pipeline stages. With both counts unset, num_layers must divide
// evenly by PP. Otherwise the first and/or last stage hold the given counts (Megatron's
// decoder_first/last_pipeline_num_layers) and the remaining stages split the rest evenly.
struct PipelineSplit {
  int first_stage_layers = -1;
  int last_stage_layers = -1;
};

struct ModelConfig {
  // Module name. Empty for a single-module model; in a heterogeneous layout every key of the
  // module is prefixed with "{name}." so modules never share keys.
  std::string name;
  int num_layers = 2;
  int hidden_size = 64;
  int num_attention_heads = 4;
  int num_query_groups = 0;  // 0: one per head (multi-head attention)
  int ffn_hidden_size = 0;   // 0: 4 * hidden_size
  int vocab_size = 256;
  bool gated_linear_unit = false;  // fc1 produces 2 * ffn (SwiGLU)
  bool add_bias = false;
  bool tie_embeddings = true;   // output layer shares the word embedding
  int num_experts = 0;          // 0: dense model
  int moe_ffn_hidden_size = 0;  // 0: ffn_hidden_size
  int moe_layer_freq = 1;       // with experts: layer i is MoE iff i % moe_layer_freq == 0
  DType params_dtype = DType::kBFloat16;
  PipelineSplit pipeline_split;

  int query_groups() const { return num_query_groups > 0 ? num_query_groups : num_attention_heads; }
  int ffn() const { return ffn_hidden_size > 0 ? ffn_hidden_size : 4 * hidden_size; }
  int moe_ffn() const { return moe_ffn_hidden_size > 0 ? moe_ffn_hidden_size : ffn(); }
  int kv_channels() const { return hidden_size / num_attention_heads; }
  bool is_moe_layer(int layer) const {
    return num_experts > 0 && moe_layer_freq > 0 && layer % moe_layer_freq == 0;
  }
  // All layers have the same parameter kinds (all dense or all MoE).
  bool homogeneous_layers() const { return num_experts == 0 || moe_layer_freq == 1; }
  // "{name}." or "".
  std::string key_prefix() const { return name.empty() ? std::string() : name + "."; }
};

// Checks the config on its own (positive sizes, hidden divisible by heads, heads by query groups,
// a sane pipeline split). Layout-dependent checks are in layout.h. Errors name field and value.
Status ValidateModelConfig(const ModelConfig& config);

enum class ParamPlacement {
  kEmbedding,  // first pipeline stage (word embedding)
  kLayer,      // the stage that owns `layer`
  kOutput,     // last pipeline stage (final norm, untied output layer)
};

struct ParameterSpec {
  std::string name;  // unique: "decoder.layers.3.mlp.experts.1.linear_fc1.weight"
  std::string key;   // checkpoint key: "decoder.layers.mlp.experts.linear_fc1.weight"
  Dims shape;        // this instance's shape (without the prepended layer/expert axes)
  int tp_axis = -1;  // axis split by TP (by expert-TP for expert parameters); -1: replicated
  int layer = -1;    // global layer index, for layer parameters
  int expert = -1;   // global expert index, for expert parameters
  ParamPlacement placement = ParamPlacement::kLayer;
  bool no_weight_decay = false;  // norms and biases (Megatron's default grouping)

  bool is_expert() const { return expert >= 0; }
  // Number of prepended axes in the checkpoint: the layer axis (homogeneous layer params) and
  // the expert axis (expert params).
  int prepend_axis_num = 0;
};

// Every parameter of the model, in a fixed order (embedding, layers in order, final norm, output).
// Precondition: ValidateModelConfig(config).ok().
std::vector<ParameterSpec> ModelParameters(const ModelConfig& config);

}  // namespace ckptspec
