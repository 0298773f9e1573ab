// Differential op-sequence fuzzing: the input decodes (op_input.h) into a run and a sequence of
// job operations (train, save sync/async with the plan cache on or off, finalize, a rerun fault,
// a crash at a storage operation, a restart under the same run, another layout and flags, or one
// more parameter, a freeze), which run against the specification (the model of stateful_ops.h,
// with ExpectedResume for every restart) and the reference target, exactly as the stateful test
// runs them. Any difference aborts with the scenario in words: the run, the operations so far and
// the postcondition that failed. Operations that do not apply to the state are skipped.
#include <cstdio>
#include <sstream>
#include <string>

#include "fuzz/fuzz_target.h"
#include "fuzz/op_input.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

const TargetFactory& Reference() {
  static const TargetFactory factory = ReferenceTargetFactory();
  return factory;
}

[[noreturn]] void ReportDivergence(const RunSpec& run, const std::vector<std::string>& ops,
                                   const std::string& failed) {
  std::ostringstream os;
  os << "ckptspec op_sequence_fuzzer: the reference diverges from the specification\n"
     << "run:\n  " << DescribeRun(run) << "\noperations:\n";
  for (size_t i = 0; i < ops.size(); ++i) os << "  " << i + 1 << ". " << ops[i] << "\n";
  os << "failed: " << failed << "\n";
  std::fputs(os.str().c_str(), stderr);
  CKPTSPEC_FUZZ_CHECK(false, "the reference agrees with the specification");
}

}  // namespace
}  // namespace ckptspec

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  FuzzedDataProvider input(data, size);
  const std::optional<RunSpec> run = ReadRun(&input);
  if (!run) return 0;
  StatefulModel model;
  StatefulSut sut;
  const Status started = StartScenario(Reference(), *run, &model, &sut);
  if (!started.ok()) ReportDivergence(*run, {}, "the run does not start: " + started.ToString());
  std::vector<std::string> executed;
  for (int i = 0; i < kMaxOps && input.remaining_bytes() > 0; ++i) {
    const std::optional<StatefulOp> op = ReadOp(&input, model);
    if (!op || !OpApplies(*op, model)) continue;
    StatefulModel next = model;
    ApplyOp(*op, &next);
    executed.push_back(DescribeOp(*op));
    const std::string failed = RunOp(*op, model, next, &sut);
    if (!failed.empty()) ReportDivergence(*run, executed, failed);
    model = std::move(next);
  }
  return 0;
}
