#include "model/run_spec.h"

#include <algorithm>
#include <sstream>

#include "model/describe.h"
#include "model/training_step.h"

namespace ckptspec {

std::string DescribeRun(const RunSpec& run) {
  std::ostringstream os;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const ModuleLayout& m = run.layout.modules()[i];
    os << (i ? "\n  " : "") << (m.name.empty() ? "" : "module '" + m.name + "' ") << "ranks ["
       << m.first_rank << ", " << m.end_rank() << "): " << m.layout.ToString() << "; "
       << DescribeTrainingConfig(run.configs[i]);
  }
  os << "\n  optimizer format " << OptimizerFormatName(run.sharding.optimizer_format);
  return os.str();
}

Status ExpectedResume(const RunSpec& saved_run, const std::vector<TrainingState>& saved,
                      const RunSpec& run, const LoadFlags& flags, std::vector<TrainingState>* out) {
  if (saved.size() != run.configs.size()) {
    return Status::InvalidArgument("the checkpoint holds " + std::to_string(saved.size()) +
                                   " modules, the run has " + std::to_string(run.configs.size()));
  }
  out->clear();
  for (size_t i = 0; i < saved.size(); ++i) {
    CheckpointDescriptor ckpt;
    ckpt.state = saved[i];
    ckpt.layout = saved_run.layout.modules()[i].layout;
    ckpt.optimizer_format = saved_run.sharding.optimizer_format;
    ckpt.run_world_size = saved_run.layout.world_size();
    ckpt.first_rank = saved_run.layout.modules()[i].first_rank;
    ResumeRequest request;
    request.config = run.configs[i];
    request.layout = run.layout.modules()[i].layout;
    request.flags = flags;
    request.run_world_size = run.layout.world_size();
    request.first_rank = run.layout.modules()[i].first_rank;
    TrainingState expected;
    CKPTSPEC_RETURN_IF_ERROR(
        ExpectedStateAfterLoad(ckpt, request, &expected)
            .WithContext(run.layout.modules()[i].name.empty()
                             ? std::string("load rules")
                             : "module '" + run.layout.modules()[i].name + "'"));
    out->push_back(std::move(expected));
  }
  return Status::OK();
}

void FitConfigToLayout(const Layout& layout, TrainingConfig* config) {
  config->data.dp_size = layout.dp();
  const int64_t per_dp = config->data.global_batch_size / config->data.micro_batch_size;
  if (per_dp % layout.dp() != 0) {
    // The micro-batch count per DP rank must stay whole.
    config->data.global_batch_size =
        config->data.micro_batch_size * layout.dp() * std::max<int64_t>(1, per_dp / layout.dp());
  }
  if (config->data.sampler == DataSampler::kPerRank) {
    config->data.num_samples = std::max(config->data.num_samples, layout.dp());
  }
  config->ranks.clear();
  for (int64_t rank = 0; rank < layout.world_size(); ++rank)
    config->ranks.push_back(layout.Coords(rank));
}

Status InitialStates(const RunSpec& run, std::vector<TrainingState>* states) {
  states->clear();
  for (const TrainingConfig& config : run.configs) {
    TrainingState s;
    CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(config, &s));
    states->push_back(std::move(s));
  }
  return Status::OK();
}

Status TrainRun(std::vector<TrainingState>* states, int64_t n) {
  for (TrainingState& s : *states) CKPTSPEC_RETURN_IF_ERROR(Train(&s, n));
  return Status::OK();
}

std::string FirstRunDifference(const std::vector<TrainingState>& a,
                               const std::vector<TrainingState>& b) {
  if (a.size() != b.size()) {
    return std::to_string(a.size()) + " modules vs " + std::to_string(b.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string d = FirstDifference(a[i], b[i]);
    if (!d.empty()) {
      const std::string& name = a[i].config.model.name;
      return name.empty() ? d : "module '" + name + "': " + d;
    }
  }
  return "";
}

}  // namespace ckptspec
