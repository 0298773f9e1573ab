#include "model/model_config.h"

namespace ckptspec {

namespace {

Status Positive(const char* field, int value) {
  if (value > 0) return Status::OK();
  return Status::InvalidArgument(std::string(field) + " = " + std::to_string(value) +
                                 ", must be positive");
}

}  // namespace

Status ValidateModelConfig(const ModelConfig& c) {
  CKPTSPEC_RETURN_IF_ERROR(Positive("num_layers", c.num_layers));
  CKPTSPEC_RETURN_IF_ERROR(Positive("hidden_size", c.hidden_size));
  CKPTSPEC_RETURN_IF_ERROR(Positive("num_attention_heads", c.num_attention_heads));
  CKPTSPEC_RETURN_IF_ERROR(Positive("vocab_size", c.vocab_size));
  if (c.num_query_groups < 0) return Positive("num_query_groups", c.num_query_groups);
  if (c.ffn_hidden_size < 0) return Positive("ffn_hidden_size", c.ffn_hidden_size);
  if (c.moe_ffn_hidden_size < 0) return Positive("moe_ffn_hidden_size", c.moe_ffn_hidden_size);
  if (c.num_experts < 0) return Positive("num_experts", c.num_experts);
  if (c.num_experts > 0) CKPTSPEC_RETURN_IF_ERROR(Positive("moe_layer_freq", c.moe_layer_freq));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return Status::InvalidArgument(
        "hidden_size = " + std::to_string(c.hidden_size) +
        " is not divisible by num_attention_heads = " + std::to_string(c.num_attention_heads));
  }
  if (c.num_attention_heads % c.query_groups() != 0) {
    return Status::InvalidArgument(
        "num_attention_heads = " + std::to_string(c.num_attention_heads) +
        " is not divisible by num_query_groups = " + std::to_string(c.query_groups()));
  }
  const PipelineSplit& s = c.pipeline_split;
  if (s.first_stage_layers < -1 || s.last_stage_layers < -1) {
    return Status::InvalidArgument(
        "pipeline_split: stage layer counts must be >= 0 (or -1: unset)");
  }
  const int fixed = (s.first_stage_layers > 0 ? s.first_stage_layers : 0) +
                    (s.last_stage_layers > 0 ? s.last_stage_layers : 0);
  if (fixed > c.num_layers) {
    return Status::InvalidArgument(
        "pipeline_split: first + last stage layers = " + std::to_string(fixed) +
        " exceed num_layers = " + std::to_string(c.num_layers));
  }
  for (char ch : c.name) {
    if (ch == '.' || ch == '/' || ch == ' ') {
      return Status::InvalidArgument("module name '" + c.name +
                                     "' must not contain '.', '/' or spaces");
    }
  }
  return Status::OK();
}

std::vector<ParameterSpec> ModelParameters(const ModelConfig& c) {
  std::vector<ParameterSpec> params;
  const std::string prefix = c.key_prefix();
  const int64_t h = c.hidden_size;
  const int64_t qkv_rows =
      static_cast<int64_t>(c.num_attention_heads + 2 * c.query_groups()) * c.kv_channels();
  const bool homogeneous = c.homogeneous_layers();

  auto add = [&](ParameterSpec p) { params.push_back(std::move(p)); };

  add({prefix + "embedding.word_embeddings.weight",
       prefix + "embedding.word_embeddings.weight",
       {c.vocab_size, h},
       0,
       -1,
       -1,
       ParamPlacement::kEmbedding,
       false,
       0});

  for (int layer = 0; layer < c.num_layers; ++layer) {
    const std::string logical = prefix + "decoder.layers." + std::to_string(layer) + ".";
    const std::string keyed =
        prefix + (homogeneous ? std::string("decoder.layers.")
                              : "decoder.layers." + std::to_string(layer) + ".");
    const int layer_axes = homogeneous ? 1 : 0;
    auto layer_param = [&](const std::string& suffix, Dims shape, int tp_axis, bool no_wd) {
      add({logical + suffix, keyed + suffix, std::move(shape), tp_axis, layer, -1,
           ParamPlacement::kLayer, no_wd, layer_axes});
    };
    layer_param("self_attention.linear_qkv.layer_norm_weight", {h}, -1, true);
    layer_param("self_attention.linear_qkv.weight", {qkv_rows, h}, 0, false);
    if (c.add_bias) layer_param("self_attention.linear_qkv.bias", {qkv_rows}, 0, true);
    layer_param("self_attention.linear_proj.weight", {h, h}, 1, false);
    if (c.add_bias) layer_param("self_attention.linear_proj.bias", {h}, -1, true);

    if (!c.is_moe_layer(layer)) {
      const int64_t ffn = c.ffn();
      const int64_t fc1_rows = c.gated_linear_unit ? 2 * ffn : ffn;
      layer_param("mlp.linear_fc1.layer_norm_weight", {h}, -1, true);
      layer_param("mlp.linear_fc1.weight", {fc1_rows, h}, 0, false);
      if (c.add_bias) layer_param("mlp.linear_fc1.bias", {fc1_rows}, 0, true);
      layer_param("mlp.linear_fc2.weight", {h, ffn}, 1, false);
      if (c.add_bias) layer_param("mlp.linear_fc2.bias", {h}, -1, true);
      continue;
    }
    layer_param("pre_mlp_layernorm.weight", {h}, -1, true);
    layer_param("mlp.router.weight", {c.num_experts, h}, -1, false);
    const int64_t ffn = c.moe_ffn();
    const int64_t fc1_rows = c.gated_linear_unit ? 2 * ffn : ffn;
    for (int e = 0; e < c.num_experts; ++e) {
      const std::string expert_logical = logical + "mlp.experts." + std::to_string(e) + ".";
      auto expert_param = [&](const std::string& suffix, Dims shape, int tp_axis, bool no_wd) {
        add({expert_logical + suffix, keyed + "mlp.experts." + suffix, std::move(shape), tp_axis,
             layer, e, ParamPlacement::kLayer, no_wd, layer_axes + 1});
      };
      expert_param("linear_fc1.weight", {fc1_rows, h}, 0, false);
      expert_param("linear_fc2.weight", {h, ffn}, 1, false);
    }
  }

  add({prefix + "decoder.final_layernorm.weight",
       prefix + "decoder.final_layernorm.weight",
       {h},
       -1,
       -1,
       -1,
       ParamPlacement::kOutput,
       true,
       0});
  if (!c.tie_embeddings) {
    add({prefix + "output_layer.weight",
         prefix + "output_layer.weight",
         {c.vocab_size, h},
         0,
         -1,
         -1,
         ParamPlacement::kOutput,
         false,
         0});
  }
  return params;
}

}  // namespace ckptspec
