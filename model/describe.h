// Readable one-line descriptions of configurations, for failure reports and the CLI.
#pragma once

#include <string>

#include "model/load_semantics.h"
#include "model/model_config.h"
#include "model/training_state.h"

namespace ckptspec {

// "4 layers, hidden 16, heads 4/4 groups, ffn 32, vocab 32, tied, bf16".
std::string DescribeModel(const ModelConfig& model);
// "model ...; seed 3; optimizer single, step per parameter; scheduler cosine ...; data ...".
std::string DescribeTrainingConfig(const TrainingConfig& config);
// "--finetune --no-load-rng", or "(no flags)".
std::string DescribeLoadFlags(const LoadFlags& flags);

}  // namespace ckptspec
