#include "model/observation_rules.h"

#include <cmath>
#include <map>
#include <sstream>

#include "model/number_text.h"
#include "model/observation_digest.h"

namespace ckptspec {
namespace {

std::string Num(double v) { return ExactDecimal(v); }

bool Near(double a, double b) {
  if (a == b) return true;
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

// The modules' layouts of a job, and which module a global rank is in.
struct Layouts {
  explicit Layouts(const FrameworkJob& job) : run(JobLayout(job)) {}
  HeterogeneousLayout run;
  const ModuleLayout& module(size_t m) const { return run.modules()[m]; }
};

LoadedStateClasses ClassesFor(const LoadCase& l, const Layouts& saved, const Layouts& now,
                              size_t m) {
  TrainingConfig config;  // StateClassesToLoad reads the rerun mode of the loading run
  config.rerun_mode = l.job.rerun_mode;
  return StateClassesToLoad(l.flags, config, saved.module(m).layout, now.module(m).layout);
}

bool OptimizerLoads(const LoadFlags& flags) { return !flags.finetune && !flags.no_load_optim; }

bool SameLayout(const Layouts& a, const Layouts& b) {
  if (a.run.modules().size() != b.run.modules().size()) return false;
  for (size_t m = 0; m < a.run.modules().size(); ++m) {
    if (a.module(m).layout.ToString() != b.module(m).layout.ToString()) return false;
  }
  return true;
}

std::string CompareDigests(const std::string& what, const Digests& got, const Digests& want,
                           const std::string& want_name) {
  for (const auto& [name, digest] : want) {
    const auto it = got.find(name);
    if (it == got.end()) return what + " of " + name + ": missing, " + want_name + " has it";
    if (it->second != digest) {
      return what + " of " + name + ": " + HexDigest(it->second) + ", " + want_name + " " +
             HexDigest(digest);
    }
  }
  for (const auto& [name, digest] : got) {
    if (!want.count(name)) return what + " of " + name + ": present, " + want_name + " has none";
  }
  return "";
}

// --- classes ---

std::string CheckIteration(const LoadCase& l, const Observation& loaded) {
  const int64_t want = l.flags.finetune ? 0 : l.saved.front().iteration;
  for (size_t r = 0; r < loaded.size(); ++r) {
    if (loaded[r].iteration != want) {
      return "rank " + std::to_string(r) + ": " + std::to_string(loaded[r].iteration) +
             ", expected " + std::to_string(want) +
             (l.flags.finetune ? " (finetune)" : " (the saved iteration)");
    }
  }
  return "";
}

std::string CheckModel(const LoadCase& l, const Observation& loaded, bool same_layout) {
  if (same_layout) {
    for (size_t r = 0; r < loaded.size(); ++r) {
      const std::string d =
          CompareDigests("rank " + std::to_string(r) + ": weights", loaded[r].copy(Copy::kModel),
                         l.saved[r].copy(Copy::kModel), "the saved rank");
      if (!d.empty()) return d;
    }
  }
  return CompareDigests("weights (summed over ranks)", GlobalDigests(loaded, Copy::kModel),
                        GlobalDigests(l.saved, Copy::kModel), "the saved model");
}

// The value the optimizer steps from, per parameter, summed over ranks: the offload copy where
// there is one, else the main copy, else the model weight.
Digests MasterDigests(const Observation& o) {
  Digests master = GlobalDigests(o, Copy::kModel);
  for (const auto& [name, d] : GlobalDigests(o, Copy::kMain)) master[name] = d;
  for (const auto& [name, d] : GlobalDigests(o, Copy::kOffload)) master[name] = d;
  return master;
}

std::string KeySetDifference(const std::string& what, const Digests& got, const Digests& want) {
  for (const auto& [name, d] : want) {
    if (!got.count(name)) return what + ": " + name + " has none, the fresh build has one";
  }
  for (const auto& [name, d] : got) {
    if (!want.count(name)) return what + ": " + name + " has one, the fresh build has none";
  }
  return "";
}

std::string CheckCopies(const LoadCase& l, const Observation& loaded) {
  const bool optimizer = OptimizerLoads(l.flags);
  const Digests reference =
      optimizer ? MasterDigests(l.saved) : GlobalDigests(loaded, Copy::kModel);
  const std::string reference_name =
      optimizer ? "the saved master value" : "the loaded weight (L4: copies refreshed)";
  for (Copy c : {Copy::kMain, Copy::kOffload}) {
    const Digests got = GlobalDigests(loaded, c);
    const std::string what = std::string(CopyName(c)) + " copy";
    std::string d = KeySetDifference(what, got, GlobalDigests(l.fresh, c));
    if (!d.empty()) return d;
    for (const auto& [name, digest] : got) {
      const auto it = reference.find(name);
      if (it == reference.end()) return what + " of " + name + ": no " + reference_name;
      if (it->second != digest) {
        return what + " of " + name + " (summed over ranks): " + HexDigest(digest) + ", " +
               reference_name + " " + HexDigest(it->second);
      }
    }
  }
  return "";
}

std::map<std::string, int64_t> ParamSteps(const Observation& o, std::string* conflict) {
  std::map<std::string, int64_t> steps;
  for (size_t r = 0; r < o.size(); ++r) {
    for (const auto& [name, step] : o[r].param_steps) {
      const auto [it, inserted] = steps.emplace(name, step);
      if (!inserted && it->second != step && conflict->empty()) {
        *conflict = "step of " + name + ": " + std::to_string(step) + " on rank " +
                    std::to_string(r) + ", " + std::to_string(it->second) + " on a lower rank";
      }
    }
  }
  return steps;
}

std::string CheckOptimizer(const LoadCase& l, const Observation& loaded) {
  const bool optimizer = OptimizerLoads(l.flags);
  const Observation& reference = optimizer ? l.saved : l.fresh;
  const std::string name = optimizer ? "saved" : "fresh";
  for (Copy c : {Copy::kExpAvg, Copy::kExpAvgSq}) {
    const std::string d =
        CompareDigests(std::string(CopyName(c)) + " (summed over ranks)", GlobalDigests(loaded, c),
                       GlobalDigests(reference, c), "the " + name + " one");
    if (!d.empty()) return d;
  }
  std::string conflict;
  const std::map<std::string, int64_t> got = ParamSteps(loaded, &conflict);
  if (!conflict.empty()) return conflict;
  const std::map<std::string, int64_t> want = ParamSteps(reference, &conflict);
  for (const auto& [param, step] : want) {
    const auto it = got.find(param);
    if (it == got.end())
      return "step of " + param + ": missing, the " + name + " one is " + std::to_string(step);
    if (it->second != step) {
      return "step of " + param + ": " + std::to_string(it->second) + ", the " + name + " one is " +
             std::to_string(step);
    }
  }
  for (const auto& [param, step] : got) {
    if (!want.count(param)) return "step of " + param + ": present, the " + name + " has none";
  }
  return "";
}

// Per parameter, its group's fields (params left out), the same on every rank that holds it.
std::map<std::string, GroupObservation> GroupsByParam(const Observation& o, std::string* conflict) {
  std::map<std::string, GroupObservation> by_param;
  for (size_t r = 0; r < o.size(); ++r) {
    for (const GroupObservation& g : o[r].groups) {
      GroupObservation fields = g;
      fields.params.clear();
      for (const std::string& p : g.params) {
        const auto [it, inserted] = by_param.emplace(p, fields);
        if (inserted || !conflict->empty()) continue;
        const std::string d = GroupFieldsDifference(fields, it->second);
        if (!d.empty()) {
          *conflict = p + " is in two different groups (on rank " + std::to_string(r) +
                      " and a lower rank, or twice on one rank): " + d;
        }
      }
    }
  }
  return by_param;
}

double Effective(const std::optional<double>& bound, double scheduler) {
  return bound ? *bound : scheduler;
}

// The scheduler a load leaves (L5), with init_lr and the WSD fields from the job.
SchedulerState ExpectedScheduler(const LoadCase& l) {
  SchedulerState s;
  s.config = l.job.scheduler;
  if (!OptimizerLoads(l.flags)) {
    s.num_steps = l.fresh.front().scheduler ? l.fresh.front().scheduler->num_steps : 0;
    return s;
  }
  const std::optional<SchedulerState>& saved = l.saved.front().scheduler;
  if (!saved) return s;
  s.num_steps = saved->num_steps;
  if (l.flags.use_checkpoint_scheduler && !l.flags.override_scheduler) {
    const SchedulerConfig& c = saved->config;
    s.config.max_lr = c.max_lr;
    s.config.min_lr = c.min_lr;
    s.config.lr_warmup_steps = c.lr_warmup_steps;
    s.config.lr_decay_steps = c.lr_decay_steps;
    s.config.lr_decay_style = c.lr_decay_style;
    s.config.start_wd = c.start_wd;
    s.config.end_wd = c.end_wd;
    s.config.wd_incr_steps = c.wd_incr_steps;
    s.config.wd_incr_style = c.wd_incr_style;
  }
  return s;
}

// L6 under override_scheduler: a parameter's bounds are the job's declared ones (a decoupled
// group's decoupled bounds; else the first LR-bound override naming it), else the new
// scheduler's.
void DeclaredBounds(const FrameworkJob& job, const std::string& param, bool decoupled,
                    std::optional<double>* max_lr, std::optional<double>* min_lr) {
  const GroupingConfig& g = job.optimizer.grouping;
  if (decoupled && g.decoupled_lr) {
    *max_lr = g.decoupled_lr;
    *min_lr = g.decoupled_min_lr;
    return;
  }
  for (const LrBoundOverride& o : g.lr_bound_overrides) {
    if (param.find(o.name_contains) != std::string::npos) {
      *max_lr = o.max_lr;
      *min_lr = o.min_lr;
      return;
    }
  }
}

// Where loaded LR bounds that are not the expected ones come from: "; the saved bounds of its own
// group", "; the saved bounds of another group (of <param>)", or "".
template <typename Groups>
std::string BoundsOrigin(const ParamGroupIdentity& have, const std::string& param,
                         const Groups& saved, const SchedulerConfig& c) {
  auto same = [&have, &c](const ParamGroupIdentity& id) {
    return id.Has(IdentityField::kMaxLr) && id.Has(IdentityField::kMinLr) &&
           Near(Effective(id.max_lr, c.max_lr), *have.max_lr) &&
           Near(Effective(id.min_lr, c.min_lr), *have.min_lr);
  };
  const auto own = saved.find(param);
  if (own != saved.end() && same(own->second.identity))
    return "; the saved bounds of its own group";
  for (const auto& [q, g] : saved) {
    if (q != param && same(g.identity)) return "; the saved bounds of another group (of " + q + ")";
  }
  return "";
}

std::string CheckGroups(const LoadCase& l, const Observation& loaded) {
  std::string conflict;
  const auto got = GroupsByParam(loaded, &conflict);
  if (!conflict.empty()) return conflict;
  const auto fresh = GroupsByParam(l.fresh, &conflict);
  const auto saved = GroupsByParam(l.saved, &conflict);
  for (const auto& [p, g] : fresh) {
    if (!got.count(p)) return p + ": in no param group, the fresh build has it in one";
  }
  const bool optimizer = OptimizerLoads(l.flags);
  const SchedulerState sched = ExpectedScheduler(l);
  for (const auto& [p, g] : got) {
    const auto f = fresh.find(p);
    if (f == fresh.end()) return p + ": in a param group, the fresh build has it in none";
    if (!optimizer) {
      const std::string d = GroupFieldsDifference(g, f->second);
      if (!d.empty()) return p + ": " + d + " (loaded vs the fresh group: no optimizer loaded)";
      continue;
    }
    const auto s = saved.find(p);
    if (s == saved.end()) return p + ": no saved param group holds it";
    // The saved group with L6's bounds and lr / weight_decay recomputed.
    GroupObservation want = s->second;
    ParamGroupIdentity& id = want.identity;
    const SchedulerConfig& c = sched.config;
    if (l.flags.override_scheduler) {
      std::optional<double> max_lr, min_lr;
      DeclaredBounds(l.job, p, id.is_decoupled_lr, &max_lr, &min_lr);
      id.max_lr = Effective(max_lr, c.max_lr);
      id.min_lr = Effective(min_lr, c.min_lr);
    }
    const double lr_mult = id.Has(IdentityField::kLrMult) ? id.lr_mult : 1.0;
    const double wd_mult = id.Has(IdentityField::kWdMult) ? id.wd_mult : 1.0;
    want.lr = SchedulerLr(c, sched.num_steps, Effective(id.max_lr, c.max_lr),
                          Effective(id.min_lr, c.min_lr)) *
              lr_mult;
    want.weight_decay = SchedulerWd(c, sched.num_steps) * wd_mult;
    // Bounds compare by their effective values (None is the scheduler's).
    GroupObservation have = g;
    for (GroupObservation* x : {&want, &have}) {
      if (x->identity.Has(IdentityField::kMaxLr)) {
        x->identity.max_lr = Effective(x->identity.max_lr, c.max_lr);
      }
      if (x->identity.Has(IdentityField::kMinLr)) {
        x->identity.min_lr = Effective(x->identity.min_lr, c.min_lr);
      }
    }
    const std::string why =
        l.flags.override_scheduler
            ? " (override_scheduler: bounds from the job, lr from its scheduler)"
            : " (the saved group, lr from the scheduler at the loaded num_steps)";
    // Wrong LR bounds first: they are the cause of a wrong lr, and where they came from names
    // the defect (another saved group's: groups merged on load; this group's saved ones under
    // override_scheduler: the override not applied).
    if (have.identity.Has(IdentityField::kMaxLr) && have.identity.Has(IdentityField::kMinLr) &&
        (!Near(*have.identity.max_lr, *want.identity.max_lr) ||
         !Near(*have.identity.min_lr, *want.identity.min_lr))) {
      return p + ": LR bounds " + Num(*have.identity.max_lr) + "/" + Num(*have.identity.min_lr) +
             ", expected " + Num(*want.identity.max_lr) + "/" + Num(*want.identity.min_lr) + why +
             BoundsOrigin(have.identity, p, saved, c);
    }
    if (!Near(have.lr, want.lr)) {
      return p + ": lr " + Num(have.lr) + ", expected " + Num(want.lr) + why;
    }
    if (!Near(have.weight_decay, want.weight_decay)) {
      return p + ": weight_decay " + Num(have.weight_decay) + ", expected " +
             Num(want.weight_decay) + why;
    }
    have.lr = want.lr;
    have.weight_decay = want.weight_decay;
    const std::string d = GroupFieldsDifference(have, want);
    if (!d.empty()) return p + ": " + d + " (loaded vs expected" + why + ")";
  }
  return "";
}

std::string CheckScheduler(const LoadCase& l, const Observation& loaded) {
  const SchedulerState want = ExpectedScheduler(l);
  const std::string source =
      !OptimizerLoads(l.flags)           ? "the fresh scheduler (no optimizer loaded)"
      : l.flags.override_scheduler       ? "the job's (override_scheduler), num_steps saved"
      : l.flags.use_checkpoint_scheduler ? "the checkpoint's (use_checkpoint_scheduler)"
                                         : "the job's, num_steps saved";
  for (size_t r = 0; r < loaded.size(); ++r) {
    const std::optional<SchedulerState>& got = loaded[r].scheduler;
    if (got.has_value() != l.fresh[r].scheduler.has_value()) {
      return "rank " + std::to_string(r) + ": " + (got ? "a scheduler" : "no scheduler") +
             ", the fresh build has " + (got ? "none" : "one");
    }
    if (!got) continue;
    const std::string d = SchedulerDifference(*got, want);
    if (!d.empty()) return "rank " + std::to_string(r) + ": " + d + " (expected " + source + ")";
  }
  return "";
}

std::string CheckRng(const LoadCase& l, const Observation& loaded, const Layouts& saved,
                     const Layouts& now) {
  for (size_t r = 0; r < loaded.size(); ++r) {
    const size_t m = static_cast<size_t>(now.run.ModuleOf(static_cast<int64_t>(r)));
    const ModuleLayout& module = now.module(m);
    const ModuleLayout& saved_module = saved.module(m);
    uint64_t want = l.fresh[r].rng;
    std::string source = "the fresh rank's";
    if (ClassesFor(l, saved, now, m).rng) {
      const RankCoords coords = module.layout.Coords(static_cast<int64_t>(r) - module.first_rank);
      const int index = MatchRngRank(RankCoordsOf(saved_module.layout), coords, false);
      if (index < 0) return "rank " + std::to_string(r) + ": no saved rank to take RNG from";
      const size_t from = static_cast<size_t>(saved_module.first_rank + index);
      want = l.saved[from].rng;
      source = "saved rank " + std::to_string(from) + "'s";
    }
    if (loaded[r].rng != want) {
      return "rank " + std::to_string(r) + ": " + HexDigest(loaded[r].rng) + ", expected " +
             source + " " + HexDigest(want);
    }
  }
  return "";
}

std::string CheckData(const LoadCase& l, const Observation& loaded) {
  for (size_t r = 0; r < loaded.size(); ++r) {
    const bool loads = !l.flags.finetune;
    const int64_t want = loads ? l.saved.front().consumed_samples : l.fresh[r].consumed_samples;
    if (loaded[r].consumed_samples != want) {
      return "rank " + std::to_string(r) + ": consumed_samples " +
             std::to_string(loaded[r].consumed_samples) + ", expected " + std::to_string(want) +
             (loads ? " (the saved position)" : " (finetune: a fresh position)");
    }
  }
  return "";
}

std::string CheckRerun(const LoadCase& l, const Observation& loaded, const Layouts& saved,
                       const Layouts& now) {
  for (size_t r = 0; r < loaded.size(); ++r) {
    const size_t m = static_cast<size_t>(now.run.ModuleOf(static_cast<int64_t>(r)));
    const Layout& a = saved.module(m).layout;
    const Layout& b = now.module(m).layout;
    const bool unchanged = saved.run.world_size() == now.run.world_size() &&
                           a.world_size() == b.world_size() && a.tp() == b.tp() &&
                           a.pp() == b.pp() && a.dp() == b.dp();
    const bool loads = ClassesFor(l, saved, now, m).rerun && unchanged;
    RerunObservation want = loads ? l.saved[r].rerun : l.fresh[r].rerun;
    // A machine the load does not restore counts the loop's iterations from the loaded one (L2).
    if (!loads) want.current_iteration = l.flags.finetune ? 0 : l.saved.front().iteration;
    const RerunObservation& got = loaded[r].rerun;
    if (!(got == want)) {
      return "rank " + std::to_string(r) + ": " + got.mode + " " + got.state + " at " +
             std::to_string(got.current_iteration) + " " + HexDigest(got.digest) + ", expected " +
             (loads ? "the saved" : "the fresh") + " machine " + want.mode + " " + want.state +
             " at " + std::to_string(want.current_iteration) + " " + HexDigest(want.digest);
    }
  }
  return "";
}

}  // namespace

const char* StateClassName(StateClass c) {
  switch (c) {
    case StateClass::kIteration:
      return "iteration";
    case StateClass::kModel:
      return "model";
    case StateClass::kCopies:
      return "copies";
    case StateClass::kOptimizer:
      return "optimizer";
    case StateClass::kGroups:
      return "groups";
    case StateClass::kScheduler:
      return "scheduler";
    case StateClass::kRng:
      return "rng";
    case StateClass::kData:
      return "data";
    case StateClass::kRerun:
      return "rerun";
  }
  return "?";
}

std::string CheckLoadedClass(const LoadCase& l, const Observation& loaded, StateClass c) {
  const Layouts saved(l.saved_job), now(l.job);
  std::string d;
  switch (c) {
    case StateClass::kIteration:
      d = CheckIteration(l, loaded);
      break;
    case StateClass::kModel:
      d = CheckModel(l, loaded, SameLayout(saved, now));
      break;
    case StateClass::kCopies:
      d = CheckCopies(l, loaded);
      break;
    case StateClass::kOptimizer:
      d = CheckOptimizer(l, loaded);
      break;
    case StateClass::kGroups:
      d = CheckGroups(l, loaded);
      break;
    case StateClass::kScheduler:
      d = CheckScheduler(l, loaded);
      break;
    case StateClass::kRng:
      d = CheckRng(l, loaded, saved, now);
      break;
    case StateClass::kData:
      d = CheckData(l, loaded);
      break;
    case StateClass::kRerun:
      d = CheckRerun(l, loaded, saved, now);
      break;
  }
  return d.empty() ? d : std::string(StateClassName(c)) + ": " + d;
}

std::string CheckLoaded(const LoadCase& l, const Observation& loaded) {
  for (StateClass c : kStateClasses) {
    std::string d = CheckLoadedClass(l, loaded, c);
    if (!d.empty()) return d;
  }
  return "";
}

std::string CheckGroupsFollowScheduler(const FrameworkJob& job, const Observation& o) {
  for (size_t r = 0; r < o.size(); ++r) {
    if (!o[r].scheduler) continue;
    SchedulerConfig c = job.scheduler;  // init_lr and WSD fields are not observed
    const SchedulerConfig& seen = o[r].scheduler->config;
    c.max_lr = seen.max_lr;
    c.min_lr = seen.min_lr;
    c.lr_warmup_steps = seen.lr_warmup_steps;
    c.lr_decay_steps = seen.lr_decay_steps;
    c.lr_decay_style = seen.lr_decay_style;
    c.start_wd = seen.start_wd;
    c.end_wd = seen.end_wd;
    c.wd_incr_steps = seen.wd_incr_steps;
    c.wd_incr_style = seen.wd_incr_style;
    const int64_t n = o[r].scheduler->num_steps;
    for (const GroupObservation& g : o[r].groups) {
      const ParamGroupIdentity& id = g.identity;
      const double lr_mult = id.Has(IdentityField::kLrMult) ? id.lr_mult : 1.0;
      const double wd_mult = id.Has(IdentityField::kWdMult) ? id.wd_mult : 1.0;
      const double max_lr =
          Effective(id.Has(IdentityField::kMaxLr) ? id.max_lr : std::nullopt, c.max_lr);
      const double min_lr =
          Effective(id.Has(IdentityField::kMinLr) ? id.min_lr : std::nullopt, c.min_lr);
      const double lr = SchedulerLr(c, n, max_lr, min_lr) * lr_mult;
      const double wd = SchedulerWd(c, n) * wd_mult;
      const std::string where = "rank " + std::to_string(r) + ", the group of " +
                                (g.params.empty() ? std::string("no parameter") : g.params[0]);
      if (!Near(g.lr, lr)) {
        return where + ": lr " + Num(g.lr) + ", its scheduler at num_steps " + std::to_string(n) +
               " gives " + Num(lr) + " (max_lr " + Num(max_lr) + ", min_lr " + Num(min_lr) +
               ", lr_mult " + Num(lr_mult) + ")";
      }
      if (!Near(g.weight_decay, wd)) {
        return where + ": weight_decay " + Num(g.weight_decay) + ", its scheduler gives " +
               Num(wd) + " (wd_mult " + Num(wd_mult) + ")";
      }
    }
  }
  return "";
}

std::string MissingIdentityField(const Observation& o) {
  const IdentityField core[] = {IdentityField::kWdMult, IdentityField::kLrMult,
                                IdentityField::kIsExpertParallel, IdentityField::kIsDecoupledLr};
  for (size_t r = 0; r < o.size(); ++r) {
    for (const GroupObservation& g : o[r].groups) {
      for (IdentityField f : core) {
        if (!g.identity.Has(f)) {
          return "rank " + std::to_string(r) + ": the group of " +
                 (g.params.empty() ? std::string("no parameter") : g.params[0]) + " (optimizer " +
                 g.optimizer + ") lacks " + IdentityFieldName(f);
        }
      }
    }
  }
  return "";
}

}  // namespace ckptspec
