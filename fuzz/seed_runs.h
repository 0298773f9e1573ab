// The small runs the fuzz targets' seed corpora come from (fuzz/seed_tool.cc writes them), and
// which checkpoint_dir_fuzzer's framework templates request (a bundle names one by index).
// Contract: every run's initial states build, train and shard (the seed tool dies otherwise), and
// the list only ever grows at its end (kept bundles refer to runs by index).
#pragma once

#include <string>
#include <vector>

#include "model/run_spec.h"

namespace ckptspec {

struct SeedRun {
  std::string name;  // names the corpus files: "tp2_pp2_dp2_dense_fully"
  RunSpec run;
};

const std::vector<SeedRun>& SeedRuns();

}  // namespace ckptspec
