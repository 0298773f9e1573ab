// P15, strict handling: for every StrictMode, a load whose templates request keys the checkpoint
// lacks ("unexpected", per rank) and leave checkpoint keys requested by no rank ("missing")
// does exactly what StrictRuleOf (targets/strict_mode.h) says of the mode: it errs where the rule
// fails or raises (naming the keys), reports `unexpected` / `missing` where it returns them (the
// true per-rank sets, the true global set; nothing elsewhere), warns where it warns (naming every
// key; no other mode warns), and loads every requested entry but the unexpected ones, holding the
// saved data.
// The templates are the framework's own for the same run, edited: some keys removed from every
// rank (missing), some renamed on every rank (missing and unexpected), extra per-rank tensors and
// objects (unexpected).
// The unedited templates of a plain resume request every saved key (no "missing" at all).
// Catches: the bugs its entry in properties/catalog.cc names (docs/BUGS.md), and strict-mode lists
// computed per rank instead of globally (or the reverse), unexpected entries left in the result,
// missing keys that raise in the wrong mode, partial loads.
#include <algorithm>
#include <map>
#include <set>

#include "generators/run_gen.h"
#include "properties/property.h"
#include "properties/property_util.h"

namespace ckptspec {

namespace {

using KeySet = std::set<std::string>;

KeySet KeysOf(const ShardedStateDict& d) {
  KeySet keys;
  for (const ShardedTensor& t : d.tensors) keys.insert(t.spec.key);
  for (const ShardedObject& o : d.objects) keys.insert(o.spec.key);
  return keys;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

bool Mentions(const std::vector<std::string>& lines, const std::string& key) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(key) != std::string::npos; });
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// What the save wrote, by place: tensors by (key, offset, shape), objects by unique key; the
// main replica's data (what the checkpoint holds).
struct SavedIndex {
  std::map<std::string, const std::vector<uint8_t>*> tensors;
  std::map<std::string, const std::string*> objects;
};

std::string TensorPlace(const TensorSpec& spec) {
  std::string s = spec.key + "@";
  for (int64_t o : spec.global_offset) s += std::to_string(o) + ",";
  s += "/";
  for (int64_t d : spec.local_shape) s += std::to_string(d) + ",";
  return s;
}

SavedIndex IndexSaved(const std::vector<ShardedStateDict>& saved) {
  SavedIndex index;
  for (size_t r = 0; r < saved.size(); ++r) {
    for (const ShardedTensor& t : saved[r].tensors) {
      if (IsMainReplica(t.spec.replica_id)) index.tensors[TensorPlace(t.spec)] = &t.data;
    }
    for (const ShardedObject& o : saved[r].objects) {
      if (IsMainReplica(o.spec.replica_id))
        index.objects[StoredObjectKey(o.spec, static_cast<int64_t>(r))] = &o.data;
    }
  }
  return index;
}

// Every loaded entry holds what the save wrote at its place.
std::string CompareWithSaved(const ShardedStateDict& got, const SavedIndex& saved, size_t r) {
  const std::string who = "rank " + std::to_string(r) + ": ";
  for (const ShardedTensor& t : got.tensors) {
    auto it = saved.tensors.find(TensorPlace(t.spec));
    if (it == saved.tensors.end())
      return who + "loaded tensor '" + TensorPlace(t.spec) + "' was never saved";
    if (*it->second != t.data)
      return who + "tensor '" + TensorPlace(t.spec) + "' differs from the saved data";
  }
  for (const ShardedObject& o : got.objects) {
    const std::string key = StoredObjectKey(o.spec, static_cast<int64_t>(r));
    auto it = saved.objects.find(key);
    if (it == saved.objects.end()) return who + "loaded object '" + key + "' was never saved";
    if (*it->second != o.data) return who + "object '" + key + "' differs from the saved data";
  }
  return "";
}

// Saves `states` of `run` as iteration k on `target` and finalizes; the framework's dicts saved.
std::vector<ShardedStateDict> SaveStates(const RunSpec& run,
                                         const std::vector<TrainingState>& states, int64_t k,
                                         Target& target) {
  std::vector<ShardedStateDict> saved;
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, states, run.sharding, &saved));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(k, saved, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
  return saved;
}

// The framework's own load templates for `run`, for the checkpoint `target` holds.
std::vector<ShardedStateDict> FrameworkTemplates(const RunSpec& run, Target& target) {
  LoadRequest probe;
  probe.templates.resize(run.layout.world_size());
  LoadResult probed;
  CKPTSPEC_RC_ASSERT_OK(target.engine().Load(std::move(probe), &probed));
  RC_ASSERT(!probed.state.empty());
  CheckpointInfo info;
  CKPTSPEC_RC_ASSERT_OK(target.framework().ReadCheckpointInfo(probed.state[0].common, &info));
  std::vector<ShardedStateDict> templates;
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().LoadTemplates(run.layout, run.configs, info, LoadFlags(), &templates));
  return templates;
}

// The edits made to the templates: keys dropped and renamed on every rank, extra per-rank keys.
struct TemplateEdits {
  KeySet dropped, renamed;
  std::vector<std::string> extras;  // "rank R: key"
};

// Adds `n` drawn extra tensors and objects, each to a drawn rank; their "rank R: key" lines.
std::vector<std::string> AddExtraEntries(int n, std::vector<ShardedStateDict>* templates) {
  const size_t world = templates->size();
  std::vector<std::string> extras;
  for (int i = 0; i < n; ++i) {
    const size_t r = *rc::gen::inRange<size_t>(0, world);
    const bool object = *rc::gen::arbitrary<bool>();
    const std::string key = "p15_extra_" + std::string(object ? "object" : "tensor") + "_" +
                            std::to_string(i) + ".rank" + std::to_string(r);
    if (object) {
      ShardedObject o;
      o.spec.key = key;
      (*templates)[r].objects.push_back(o);
    } else {
      ShardedTensor t;
      t.spec.key = key;
      t.spec.dtype = DType::kInt32;
      t.spec.global_shape = {1};
      t.spec.global_offset = {0};
      t.spec.local_shape = {1};
      t.data.assign(4, 0);
      (*templates)[r].tensors.push_back(t);
    }
    extras.push_back("rank " + std::to_string(r) + ": " + key);
  }
  return extras;
}

// Removes the `dropped` keys from every template and renames the `renamed` ones.
void DropAndRename(const KeySet& dropped, const KeySet& renamed,
                   std::vector<ShardedStateDict>* templates) {
  for (ShardedStateDict& t : *templates) {
    auto gone = [&](const std::string& key) { return dropped.count(key) > 0; };
    t.tensors.erase(std::remove_if(t.tensors.begin(), t.tensors.end(),
                                   [&](const ShardedTensor& e) { return gone(e.spec.key); }),
                    t.tensors.end());
    t.objects.erase(std::remove_if(t.objects.begin(), t.objects.end(),
                                   [&](const ShardedObject& e) { return gone(e.spec.key); }),
                    t.objects.end());
    for (ShardedTensor& e : t.tensors) {
      if (renamed.count(e.spec.key)) e.spec.key += ".p15_renamed";
    }
    for (ShardedObject& e : t.objects) {
      if (renamed.count(e.spec.key)) e.spec.key += ".p15_renamed";
    }
  }
}

// Draws and applies the edits: keys dropped everywhere, keys renamed everywhere, extra entries.
TemplateEdits EditTemplates(std::vector<ShardedStateDict>* templates) {
  KeySet requested_before;
  for (const ShardedStateDict& t : *templates) {
    const KeySet keys = KeysOf(t);
    requested_before.insert(keys.begin(), keys.end());
  }
  std::vector<std::string> pool(requested_before.begin(), requested_before.end());
  auto pick = [&pool]() {
    const size_t i = *rc::gen::inRange<size_t>(0, pool.size());
    const std::string key = pool[i];
    pool.erase(pool.begin() + i);
    return key;
  };
  const int n_drop = *rc::gen::inRange(0, 3);
  const int n_rename = *rc::gen::inRange(0, 3);
  const int n_extra = *rc::gen::inRange(0, 4);
  TemplateEdits edits;
  for (int i = 0; i < n_drop && !pool.empty(); ++i) edits.dropped.insert(pick());
  for (int i = 0; i < n_rename && !pool.empty(); ++i) edits.renamed.insert(pick());
  edits.extras = AddExtraEntries(n_extra, templates);
  DropAndRename(edits.dropped, edits.renamed, templates);
  return edits;
}

// The true strict-mode sets of a load: the unexpected keys of each rank, the missing ones.
struct TrueKeys {
  std::vector<std::vector<std::string>> unexpected;  // per rank, sorted
  std::vector<std::string> missing;                  // sorted
  bool any_unexpected = false;
  bool any_missing = false;
};

// The true sets of a load of `templates` from a checkpoint of the `saved` dicts.
TrueKeys TrueKeysOf(const std::vector<ShardedStateDict>& saved,
                    const std::vector<ShardedStateDict>& templates) {
  KeySet in_checkpoint;
  for (const ShardedStateDict& d : saved) {
    const KeySet keys = KeysOf(d);
    in_checkpoint.insert(keys.begin(), keys.end());
  }
  TrueKeys truth;
  truth.unexpected.resize(templates.size());
  KeySet requested;
  for (size_t r = 0; r < templates.size(); ++r) {
    for (const std::string& key : KeysOf(templates[r])) {
      requested.insert(key);
      if (!in_checkpoint.count(key)) truth.unexpected[r].push_back(key);
    }
    truth.any_unexpected = truth.any_unexpected || !truth.unexpected[r].empty();
  }
  for (const std::string& key : in_checkpoint) {
    if (!requested.count(key)) truth.missing.push_back(key);
  }
  truth.any_missing = !truth.missing.empty();
  return truth;
}

// Whether the strict rule makes the load fail: unexpected keys it refuses, missing ones it raises.
bool LoadMustFail(const StrictRule& rule, const TrueKeys& truth) {
  return (truth.any_unexpected && (rule.unexpected == UnexpectedKeys::kLoadFails ||
                                   rule.unexpected == UnexpectedKeys::kRaise)) ||
         (truth.any_missing && rule.missing == MissingKeys::kRaise);
}

// The load failed, naming some unexpected key (the raise modes: all), else every missing one.
void CheckErrorNamesKeys(const Status& status, const StrictRule& rule, const TrueKeys& truth) {
  RC_ASSERT(!status.ok());
  // The error names what is wrong: some unexpected key (the raise modes name all of them), or
  // under raise_all without unexpected keys, the missing ones.
  std::vector<std::string> all_unexpected;
  for (const auto& v : truth.unexpected)
    all_unexpected.insert(all_unexpected.end(), v.begin(), v.end());
  const std::vector<std::string> message{status.message()};
  if (truth.any_unexpected && rule.unexpected == UnexpectedKeys::kLoadFails) {
    RC_ASSERT(std::any_of(all_unexpected.begin(), all_unexpected.end(),
                          [&](const std::string& key) { return Mentions(message, key); }));
  } else {
    for (const std::string& key : truth.any_unexpected ? all_unexpected : truth.missing) {
      if (!Mentions(message, key)) RC_FAIL("the error does not name '" + key + "'");
    }
  }
}

// result.unexpected and result.missing are the true sets where the rule returns them, else empty.
void CheckReturnedKeys(const LoadResult& result, const StrictRule& rule, const TrueKeys& truth) {
  const size_t world = truth.unexpected.size();
  const bool returns_unexpected = rule.unexpected == UnexpectedKeys::kReturnAndDrop;
  for (size_t r = 0; r < std::max(world, result.unexpected.size()); ++r) {
    const std::vector<std::string> got =
        r < result.unexpected.size() ? Sorted(result.unexpected[r]) : std::vector<std::string>{};
    const std::vector<std::string> want =
        returns_unexpected && r < world ? truth.unexpected[r] : std::vector<std::string>{};
    if (got != want) {
      RC_FAIL("rank " + std::to_string(r) + ": result.unexpected " + Join(got) + ", expected " +
              Join(want));
    }
  }
  const std::vector<std::string> want_missing =
      rule.missing == MissingKeys::kReturn ? truth.missing : std::vector<std::string>{};
  if (Sorted(result.missing) != want_missing) {
    RC_FAIL("result.missing " + Join(Sorted(result.missing)) + ", expected " + Join(want_missing));
  }
}

// Warnings only where the rule warns, naming every unexpected or missing key it warns of.
void CheckWarnings(const LoadResult& result, const StrictRule& rule, const TrueKeys& truth) {
  const bool logs =
      rule.unexpected == UnexpectedKeys::kWarnAndDrop || rule.missing == MissingKeys::kWarn;
  if (!logs && !result.warnings.empty()) RC_FAIL("unexpected warnings " + Join(result.warnings));
  if (rule.unexpected == UnexpectedKeys::kWarnAndDrop) {
    for (const std::vector<std::string>& keys : truth.unexpected) {
      for (const std::string& key : keys) {
        if (!Mentions(result.warnings, key)) RC_FAIL("no warning names unexpected '" + key + "'");
      }
    }
  }
  if (rule.missing == MissingKeys::kWarn) {
    for (const std::string& key : truth.missing) {
      if (!Mentions(result.warnings, key)) RC_FAIL("no warning names missing '" + key + "'");
    }
  }
}

// Loaded: exactly the requested entries minus the unexpected ones, once each, with the saved data.
void CheckLoadedEntries(const LoadResult& result, const std::vector<ShardedStateDict>& templates,
                        const TrueKeys& truth, const std::vector<ShardedStateDict>& saved) {
  const size_t world = templates.size();
  RC_ASSERT(result.state.size() == world);
  const SavedIndex index = IndexSaved(saved);
  for (size_t r = 0; r < world; ++r) {
    KeySet want = KeysOf(templates[r]);
    for (const std::string& key : truth.unexpected[r]) want.erase(key);
    const KeySet got = KeysOf(result.state[r]);
    if (got != want) {
      std::vector<std::string> diff;
      std::set_symmetric_difference(got.begin(), got.end(), want.begin(), want.end(),
                                    std::back_inserter(diff));
      RC_FAIL("rank " + std::to_string(r) +
              ": loaded keys differ from requested minus unexpected: " + Join(diff));
    }
    // No entry twice: as many entries as requested ones that are not unexpected.
    size_t kept = 0;
    for (const ShardedTensor& t : templates[r].tensors) kept += want.count(t.spec.key);
    for (const ShardedObject& o : templates[r].objects) kept += want.count(o.spec.key);
    RC_ASSERT(result.state[r].tensors.size() + result.state[r].objects.size() == kept);
    CKPTSPEC_RC_ASSERT_SAME(CompareWithSaved(result.state[r], index, r), "loaded data");
  }
}

}  // namespace

void CheckStrictHandling(const TargetFactory& factory) {
  const RunSpec run = *gen::RunUpTo(8);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  std::vector<StrictMode> modes;
  for (int m = 0; m < kNumStrictModes; ++m) modes.push_back(static_cast<StrictMode>(m));
  const StrictMode mode = *rc::gen::elementOf(modes);

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));
  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  const std::vector<ShardedStateDict> saved = SaveStates(run, states, k, target);
  std::vector<ShardedStateDict> templates = FrameworkTemplates(run, target);
  const TemplateEdits edits = EditTemplates(&templates);
  const TrueKeys truth = TrueKeysOf(saved, templates);
  if (edits.dropped.empty() && edits.renamed.empty() && truth.any_missing) {
    // The framework's own templates for a plain resume (same run, no flags) request every saved
    // key; otherwise strict=raise_all would refuse every ordinary resume.
    RC_FAIL("the unedited templates leave saved keys unrequested: " + Join(truth.missing));
  }

  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << k
           << ", save, load on the same layout with strict=" << StrictModeName(mode)
           << "\n  templates: dropped everywhere "
           << Join({edits.dropped.begin(), edits.dropped.end()}) << ", renamed everywhere "
           << Join({edits.renamed.begin(), edits.renamed.end()}) << ", extra " << Join(edits.extras)
           << "\n  true missing " << Join(truth.missing) << "\n";
  RC_TAG(StrictModeName(mode));
  RC_CLASSIFY(truth.any_unexpected, "unexpected keys");
  RC_CLASSIFY(truth.any_missing, "missing keys");

  LoadRequest request;
  request.iteration = k;
  request.strict = mode;
  request.templates = templates;
  LoadResult result;
  const Status status = target.engine().Load(std::move(request), &result);
  RC_LOG() << "  load returned: " << status.ToString() << "\n";

  // What the mode must do: StrictRuleOf (targets/strict_mode.h), the one statement of the rules.
  const StrictRule rule = StrictRuleOf(mode);
  if (LoadMustFail(rule, truth)) {
    CheckErrorNamesKeys(status, rule, truth);
    return;
  }
  CKPTSPEC_RC_ASSERT_OK(status);
  CheckReturnedKeys(result, rule, truth);
  CheckWarnings(result, rule, truth);
  CheckLoadedEntries(result, templates, truth, saved);
}

}  // namespace ckptspec
