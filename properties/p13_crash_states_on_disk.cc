// P13 on the real disk: a run saves at iteration a (committed), trains to b and saves again (sync
// or async) while the storage recorder records what the target's processes do under the root.
// From the root before b's save and that recording, the states a crash could leave the disk in
// are built under each persistence model (ordered, posix-weak: crash/persistence_model.h) at the
// end of the save and at kStatesPerCase drawn crash points (DrawStates), deduplicated, and one
// state per draw (ChooseStates) is written to a fresh root and resumed by fresh processes. Each
// must resume exactly the state of a complete checkpoint: b's when b's save had reported success
// before the crash point, else a's or b's; a refusal, another iteration, or state that is no
// checkpoint's (a mix of two, partial data) fails, naming the model and the crash state. Every
// state is judged, and a violation under the ordered model is reported before one under
// posix-weak. The run then goes on from the last state: the next save commits and resumes. A
// recording the interposer could not follow fully is not judged: the case fails saying what was
// not seen.
// Its targets are served by adapter processes, which hold one async save at a time (the
// protocol's poll carries the pending save's updates): several saves in flight are the in-memory
// form's (properties/p13_crash_saves_in_flight.cc).
// Catches: a tracker published before its data is durable, a rename without the fsyncs that make
// it durable (the zero-length file after a crash), a missing directory fsync, retention that
// deletes the tracker's checkpoint, leftovers of a crashed save read as a checkpoint.
#include <map>
#include <set>
#include <utility>

#include "crash/crash_states.h"
#include "crash/fs_op_describe.h"
#include "properties/disk_forms.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/recorded_save.h"
#include "harness/storage_util.h"

namespace ckptspec {

namespace {

// Crash states resumed per case: each costs a fresh group of the target's processes and a load.
constexpr size_t kStatesPerCase = 6;

// "the crash state after op 7 of 31 (...) under posix-weak, lost: ...": how a failure names it.
// A long list of lost operations is cut (the scenario log has the whole of each state).
std::string StateName(const CrashPoint& point, const RecordedSave& recorded) {
  constexpr size_t kMaxChars = 480;
  std::string text = "the crash state " + point.Describe(recorded.ops);
  if (text.size() > kMaxChars) {
    const size_t cut = text.size() - kMaxChars;
    text.resize(kMaxChars);
    text += "... (" + std::to_string(cut) + " more characters)";
  }
  return text;
}

// The operations after which a crash is worth more than its share of the states: those that
// publish, remove or make durable a name (rename, link, unlink, rmdir, sync, a directory's fsync).
// Between two of them the states differ mostly in which data was lost.
std::vector<uint64_t> PublishingPoints(const RecordedSave& recorded) {
  std::set<FileId> dirs{recorded.before.root};
  for (const InitialEntry& entry : recorded.before.entries) {
    if (entry.is_dir) dirs.insert(entry.id);
  }
  std::vector<uint64_t> points;
  for (size_t i = 0; i < recorded.ops.size(); ++i) {
    const FsOp& op = recorded.ops[i];
    if (op.err != 0) continue;
    if (op.kind == FsOpKind::kMkdir) dirs.insert(op.file);
    const bool dir_sync = op.kind == FsOpKind::kFsync && dirs.count(op.file) > 0;
    if (dir_sync || op.kind == FsOpKind::kRename || op.kind == FsOpKind::kLink ||
        op.kind == FsOpKind::kUnlink || op.kind == FsOpKind::kRmdir ||
        op.kind == FsOpKind::kSyncAll) {
      points.push_back(i + 1);
    }
  }
  return points;
}

// One draw of a state to judge: a model, a crash point and, when `first`, the first of the
// model's states there (under posix-weak the one that loses every non-durable operation).
struct StateDraw {
  PersistenceModel model;
  uint64_t after_ops;
  bool first = false;
};

// The states every case judges: the end of the save under posix-weak with every non-durable
// operation lost (a power loss right after the save reported success: what a user relies on),
// then kStatesPerCase draws, each a model (posix-weak two times in three: it has the most states)
// and a crash point (half the time right after a publishing operation, else uniform over the
// save).
std::vector<StateDraw> DrawStates(const RecordedSave& recorded) {
  const std::vector<uint64_t> publishing = PublishingPoints(recorded);
  const uint64_t n = recorded.ops.size();
  std::vector<StateDraw> draws{{PersistenceModel::kPosixWeak, n, true}};
  for (size_t draw = 0; draw < kStatesPerCase; ++draw) {
    const PersistenceModel model = *rc::gen::element(
        PersistenceModel::kOrdered, PersistenceModel::kPosixWeak, PersistenceModel::kPosixWeak);
    const bool publish = !publishing.empty() && *rc::gen::arbitrary<bool>();
    const uint64_t point =
        publish ? *rc::gen::elementOf(publishing)
                : *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<uint64_t>(0, n + 1));
    draws.push_back({model, point, *rc::gen::arbitrary<bool>()});
  }
  return draws;
}

// For each draw, one of the distinct states enumerated at its point (indexes into
// states.distinct, ascending, each once): of the drawn model when there is one (the first, or one
// drawn), else the point's ordered state (the weak ones there were all the same tree).
std::vector<size_t> ChooseStates(const CrashStates& states, const std::vector<StateDraw>& draws) {
  std::map<std::pair<uint64_t, PersistenceModel>, std::vector<size_t>> at;
  for (size_t i = 0; i < states.distinct.size(); ++i) {
    at[{states.distinct[i].after_ops, states.distinct[i].model}].push_back(i);
  }
  std::set<size_t> chosen;
  for (const StateDraw& draw : draws) {
    auto found = at.find({draw.after_ops, draw.model});
    if (found == at.end()) found = at.find({draw.after_ops, PersistenceModel::kOrdered});
    if (found == at.end()) continue;
    const std::vector<size_t>& here = found->second;
    chosen.insert(draw.first ? here.front() : here[*rc::gen::inRange<size_t>(0, here.size())]);
  }
  return std::vector<size_t>(chosen.begin(), chosen.end());
}

}  // namespace

// How RapidCheck prints a drawn model in a counterexample (found by argument-dependent lookup, so
// in the enum's namespace).
void showValue(PersistenceModel model, std::ostream& os) { os << PersistenceModelName(model); }

void CheckCrashConsistencyOnDisk(const TargetFactory& factory) {
  const TwoSaves saves = DrawTwoSaves(factory);
  const RunSpec& run = saves.run;
  const int64_t a = saves.a, b = saves.b;
  TargetOptions options;
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  " << DescribeTwoSaves(saves)
           << ", recording every file-system operation under the root\n";
  RC_TAG(saves.async ? "async save" : "sync save");

  RecordedSave recorded;
  CKPTSPEC_RC_ASSERT_OK(RecordSave(factory, options, saves, DiskFault(), &recorded));
  CKPTSPEC_RC_ASSERT_OK(recorded.saved);
  const std::vector<StateDraw> draws = DrawStates(recorded);
  CrashStateOptions crash_options;
  crash_options.seed = *rc::gen::arbitrary<uint64_t>();
  crash_options.max_states = 1u << 20;
  for (const StateDraw& draw : draws) crash_options.only_after_ops.push_back(draw.after_ops);
  CrashStates states;
  const Status enumerated =
      EnumerateCrashStates(recorded.before, recorded.ops, crash_options, &states);
  if (!enumerated.ok()) {
    RC_LOG() << "  the recording's first operations:\n";
    for (size_t i = 0; i < recorded.ops.size() && i < 12; ++i) {
      const FsOp& op = recorded.ops[i];
      RC_LOG() << "    " << DescribeFsOp(op) << " (pid " << op.pid << ", inode " << op.file.ino
               << ", in directory inode " << op.dir.ino << ")\n";
    }
    RC_FAIL("the crash states of the save cannot be judged: " + enumerated.ToString());
  }
  RC_LOG() << "  the save did " << recorded.ops.size() << " operations; at the "
           << std::set<uint64_t>(crash_options.only_after_ops.begin(),
                                 crash_options.only_after_ops.end())
                  .size()
           << " crash points drawn, " << states.distinct.size() << " distinct crash states of "
           << states.candidates << " built (posix-weak: "
           << (states.weak_combinations == UINT64_MAX ? std::string("2^64 or more")
                                                      : std::to_string(states.weak_combinations))
           << " combinations at those points)\n";
  const std::vector<size_t> chosen = ChooseStates(states, draws);

  // Every state is judged; an ordered-model violation is reported before a posix-weak one, so a
  // known weak-model finding never hides a defect under the stronger model.
  std::string ordered_violation, weak_violation;
  std::unique_ptr<TargetUnderTest> last;
  for (size_t index : chosen) {
    const CrashPoint& point = states.distinct[index];
    const std::string name = StateName(point, recorded);
    FileTree tree;
    CKPTSPEC_RC_ASSERT_OK(BuildCrashState(recorded.before, recorded.ops, point, &tree));
    RC_TAG(std::string(PersistenceModelName(point.model)) + " model");
    last.reset();  // its processes go back first: the pool then reuses them
    last = factory.make(options);
    CKPTSPEC_RC_ASSERT_OK(WriteTree(last->storage_env(), last->root(), tree));
    std::vector<TrainingState> resumed;
    const Status status = ResumeRun(last->target(), run, ResumeOptions(), &resumed);
    RC_LOG() << "  " << name << "; the disk holds " << DescribeTree(tree) << "; resume: "
             << (status.ok() ? "iteration " + std::to_string(resumed.front().iteration)
                             : status.ToString())
             << "\n";
    const bool reported = recorded.completed_after && point.after_ops >= *recorded.completed_after;
    std::string violation;
    if (!status.ok()) {
      violation = "a fresh process refuses to resume (" + status.ToString() + "), though " +
                  (reported ? "the save of " + std::to_string(b) + " had reported success"
                            : "iteration " + std::to_string(a) + " was committed before the save");
    } else {
      const int64_t got = resumed.front().iteration;
      std::vector<TrainingState> expected;
      CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, got, &expected));
      const std::string difference = FirstRunDifference(resumed, expected);
      if (reported && got != b) {
        violation = "resumes iteration " + std::to_string(got) + ", though the save of " +
                    std::to_string(b) + " had reported success before the crash";
      } else if (got != a && got != b) {
        violation = "resumes iteration " + std::to_string(got) + ", neither " + std::to_string(a) +
                    " nor " + std::to_string(b);
      } else if (!difference.empty()) {
        violation = "the resumed state is not iteration " + std::to_string(got) +
                    "'s checkpoint (a mix of two checkpoints, or partial data): " + difference;
      }
    }
    std::string& first =
        point.model == PersistenceModel::kOrdered ? ordered_violation : weak_violation;
    if (!violation.empty() && first.empty()) first = name + ": " + violation;
  }
  if (!ordered_violation.empty()) RC_FAIL(ordered_violation);
  if (!weak_violation.empty()) RC_FAIL(weak_violation);
  RC_PRE(last != nullptr);

  // The run goes on from the last state: the next save cleans up after the crash and commits.
  std::vector<TrainingState> at_c = saves.at_b;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_c, 1));
  Target& next = last->target();
  CKPTSPEC_RC_ASSERT_OK(SaveRun(next, run, at_c, at_c.front().iteration, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(next.engine().Finalize());
  std::vector<TrainingState> after, expected;
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(next, run, ResumeOptions(), &after));
  CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, b + 1, &expected));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(after, expected), "the save after the restart");
}

}  // namespace ckptspec
