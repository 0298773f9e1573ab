// P16, corruption: after a committed save, the storage is corrupted (what a fresh process finds
// in the target's storage Env, the in-memory one or the real disk): a bit flipped in a random stored file (targets with checksums only), a random file
// truncated or deleted, a JSON file garbled, or the tracker (a root-level file holding the
// iteration) made to name an iteration that does not exist. A fresh process resuming from it
// either fails with an error that names the affected file (its base name appears in the message)
// or returns exactly the saved state; never wrong state, an exception or a crash. An uncorrupted
// control case must load (a valid checkpoint is never refused: B20).
// Catches: B20 (a valid layout misclassified), missing checksum verification, unchecked sizes
// and offsets, errors that do not say which file is bad.
#include <nlohmann/json.hpp>

#include "generators/run_gen.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "harness/storage_util.h"

namespace ckptspec {

namespace {

enum class Corruption { kNone, kFlipBit, kTruncate, kDelete, kGarbleJson, kTrackerNamesMissing };

const char* CorruptionName(Corruption c) {
  switch (c) {
    case Corruption::kNone:
      return "none (control)";
    case Corruption::kFlipBit:
      return "bit flip";
    case Corruption::kTruncate:
      return "truncation";
    case Corruption::kDelete:
      return "deleted file";
    case Corruption::kGarbleJson:
      return "garbled JSON";
    case Corruption::kTrackerNamesMissing:
      return "tracker names a missing iteration";
  }
  return "?";
}

// How RapidCheck prints the generated corruption in a counterexample.
void showValue(Corruption c, std::ostream& os) { os << CorruptionName(c); }

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsFile(const std::string& path) { return !path.empty() && path.back() != '/'; }

}  // namespace

void CheckCorruption(const TargetFactory& factory) {
  const RunSpec run = *gen::RunUpTo(8);
  const int64_t a = *rc::gen::inRange<int64_t>(0, 3);
  std::vector<Corruption> kinds{Corruption::kNone, Corruption::kTruncate, Corruption::kDelete,
                                Corruption::kGarbleJson, Corruption::kTrackerNamesMissing};
  if (factory.capabilities.checksums) kinds.push_back(Corruption::kFlipBit);
  const Corruption kind = *rc::gen::elementOf(kinds);

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, a));
  auto saving = factory.make(TargetOptions());
  CKPTSPEC_RC_ASSERT_OK(SaveRun(saving->target(), run, states, a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(saving->target().engine().Finalize());
  StorageTree tree;
  CKPTSPEC_RC_ASSERT_OK(ReadTree(saving->storage_env(), saving->root(), &tree));
  saving.reset();  // its processes go back before the restarted ones are taken

  std::vector<std::string> files, json_files, trackers;
  for (const auto& [path, content] : tree) {
    if (!IsFile(path)) continue;
    files.push_back(path);
    if (content.size() > 2 && nlohmann::json::accept(content)) json_files.push_back(path);
    if (path.find('/') == std::string::npos &&
        content.find_first_of("0123456789") != std::string::npos &&
        content.find_first_not_of("0123456789 \t\r\n") == std::string::npos &&
        std::stoll(content) == a) {
      trackers.push_back(path);
    }
  }
  RC_ASSERT(!files.empty());
  if (kind == Corruption::kGarbleJson && json_files.empty()) RC_DISCARD("no JSON file stored");
  if (kind == Corruption::kTrackerNamesMissing && trackers.empty()) RC_DISCARD("no tracker file");

  // The restarted process's storage: the tree, corrupted.
  StorageTree corrupted = tree;
  std::string affected, what;
  switch (kind) {
    case Corruption::kNone:
      break;
    case Corruption::kFlipBit: {
      affected = *rc::gen::elementOf(files);
      RC_PRE(!tree[affected].empty());
      const uint64_t offset = *rc::gen::inRange<uint64_t>(0, tree[affected].size());
      const int bit = *rc::gen::inRange(0, 8);
      corrupted[affected][offset] = static_cast<char>(corrupted[affected][offset] ^ (1 << bit));
      what = "bit " + std::to_string(bit) + " of byte " + std::to_string(offset);
      break;
    }
    case Corruption::kTruncate: {
      affected = *rc::gen::elementOf(files);
      RC_PRE(!tree[affected].empty());
      const uint64_t size = *rc::gen::inRange<uint64_t>(0, tree[affected].size());
      corrupted[affected].resize(size);
      what =
          "to " + std::to_string(size) + " of " + std::to_string(tree[affected].size()) + " bytes";
      break;
    }
    case Corruption::kDelete:
      affected = *rc::gen::elementOf(files);
      corrupted.erase(affected);
      break;
    case Corruption::kGarbleJson: {
      affected = *rc::gen::elementOf(json_files);
      std::string text = tree[affected];
      const size_t at = *rc::gen::inRange<size_t>(0, text.size());
      const std::string garbage =
          *rc::gen::elementOf(std::vector<std::string>{"}", "{", "\"", ",", "]", "nul"});
      text.replace(at, 1, garbage);
      if (nlohmann::json::accept(text)) RC_DISCARD("the garbled text is still JSON");
      corrupted[affected] = text;
      what = "byte " + std::to_string(at) + " replaced by '" + garbage + "'";
      break;
    }
    case Corruption::kTrackerNamesMissing: {
      affected = *rc::gen::elementOf(trackers);
      const int64_t named = a + *rc::gen::inRange<int64_t>(1, 1000);
      corrupted[affected] = std::to_string(named);
      what = "now names iteration " + std::to_string(named);
      break;
    }
  }
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << a
           << ", save; stored: " << DescribeTree(tree) << "\n  corruption: " << CorruptionName(kind)
           << (affected.empty() ? std::string() : " of '" + affected + "' " + what)
           << "; restart and resume\n";
  RC_TAG(CorruptionName(kind));
  auto restarted = factory.make(TargetOptions());
  CKPTSPEC_RC_ASSERT_OK(WriteTree(restarted->storage_env(), restarted->root(), corrupted));

  std::vector<TrainingState> resumed;
  const Status status = ResumeRun(restarted->target(), run, ResumeOptions(), &resumed);
  RC_LOG() << "  resume returned: " << status.ToString() << "\n";
  RC_CLASSIFY(status.ok() && kind != Corruption::kNone, "corruption not used by the load");
  if (kind == Corruption::kNone) CKPTSPEC_RC_ASSERT_OK(status);
  if (status.ok()) {
    RC_ASSERT(resumed.front().iteration == a);
    std::vector<TrainingState> expected;
    CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, a, &expected));
    CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                            "a corrupted checkpoint loaded the wrong state");
  } else if (status.message().find(BaseName(affected)) == std::string::npos) {
    RC_FAIL("the error does not name the affected file '" + affected + "': " + status.ToString());
  }
}

}  // namespace ckptspec
