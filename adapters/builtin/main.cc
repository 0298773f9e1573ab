// ckptspec_reference_adapter: the reference engine behind the adapter protocol (docs/PROTOCOL.md).
// Run one process per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (the harness
// does). Rank 0 serves every call with the reference engine on the real disk; the other ranks
// relay their requests and replies over TCP (rendezvous.h). --fault makes one rank misbehave in a
// named way (adapter_fault_flags.h), for the harness's tests; --mutant serves a catalog mutant's
// engine instead of the reference's, to show what the protocol path makes of it. --framework
// serves the framework protocol instead (framework_adapter.h: the spec's own framework over the
// reference target, or over every part a --mutant replaces).
//
// Exit status: 0 after shutdown or end of input; 2 bad flags or environment; 3 the exit-save fault.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "adapters/builtin/adapter_fault_flags.h"
#include "adapters/builtin/tracker_before_sync_env.h"
#include "targets/reference/format.h"
#include "adapters/builtin/crashing_env.h"
#include "adapters/builtin/framework_adapter.h"
#include "adapters/builtin/reference_adapter.h"
#include "adapters/builtin/rendezvous.h"
#include "model/json_util.h"
#include "targets/mutants/catalog.h"
#include "targets/process/protocol.h"

namespace {

// A catalog mutant the adapter can serve: its engine replaced, its framework and plan cache not.
bool ReplacesOnlyTheEngine(const ckptspec::ReplacedParts& parts) {
  return parts.engine && !parts.framework && !parts.plan_cache;
}

using ckptspec::InjectedFault;
using nlohmann::json;

constexpr double kRendezvousTimeout_s = 30;

bool EnvInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  char* end = nullptr;
  const long value = std::strtol(v, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 20) return false;
  *out = static_cast<int>(value);
  return true;
}

// A request as JSON (the project's reader: bounded depth, no duplicate keys), or null.
json ParseOrNull(const std::string& line) {
  json j;
  return ckptspec::ParseJson(line, ckptspec::JsonLimits(), &j).ok() ? j : json();
}

std::string OpOf(const json& request) {
  return request.is_object() && request.contains("op") && request["op"].is_string()
             ? request["op"].get<std::string>()
             : std::string();
}

// Rank 0 relays each peer's reply line behind "1 " when its own request was shutdown, else "0 ":
// a peer that commits no fault prints the reply as it came and exits on the flag, parsing
// neither its request nor the reply.
std::string Relay(bool shutdown, const json& reply) {
  return (shutdown ? "1 " : "0 ") + ckptspec::DumpLine(reply);
}

// After losing a peer: the harness names the rank that failed; this one waits for its end.
[[noreturn]] void Abandon(const ckptspec::Status& why) {
  std::cerr << "reference adapter: " << why.ToString() << "; waiting for the harness\n";
  std::string ignored;
  while (std::getline(std::cin, ignored)) {
  }
  std::exit(1);
}

// A peer's end of Relay: the reply line rank 0 relayed, and whether it was the shutdown's;
// abandons when the relay fails or is malformed.
void ReceiveRelay(ckptspec::Star& star, bool* shutdown, std::string* reply_line) {
  std::string message;
  ckptspec::Status s = star.Receive(0, &message);
  if (s.ok() &&
      (message.size() < 2 || (message[0] != '0' && message[0] != '1') || message[1] != ' ')) {
    s = ckptspec::Status::Corruption("rank 0 relayed a malformed reply");
  }
  if (!s.ok()) Abandon(s);
  *shutdown = message[0] == '1';
  *reply_line = message.substr(2);
}

struct Fault {
  InjectedFault kind = InjectedFault::kNone;
  int rank = 0;
  std::string path;  // --fault-path: what the hostile faults point their links at
  bool Here(int me, InjectedFault k) const { return kind == k && rank == me; }
};

// The "file" of the first tensor of a request, "" when it has none.
std::string FirstTensorFile(const json& request) {
  if (!request.is_object() || !request.contains("tensors") || !request["tensors"].is_array() ||
      request["tensors"].empty() || !request["tensors"][0].is_object()) {
    return "";
  }
  return request["tensors"][0].value("file", "");
}

// A process in a session of its own, reparented away from this rank: a daemon.
void StartDaemon() {
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    if (fork() == 0) {
      for (int fd = 0; fd < 3; ++fd) close(fd);
      for (;;) pause();
    }
    _exit(0);
  }
  if (child > 0) waitpid(child, nullptr, 0);
}

// The hostile faults this rank commits before replying to `request` (its own).
void Attack(const json& request, const std::string& op, int me, const Fault& fault) {
  static int saves = 0;
  if (op == "save") ++saves;
  if (op == "save" && fault.Here(me, InjectedFault::kLinkOut)) {
    const std::string dir = request.value("directory", "");
    (void)ckptspec::CreateDirs(ckptspec::Env::Posix(), dir);
    if (symlink(fault.path.c_str(), (dir + "/escape-link").c_str()) != 0 && errno != EEXIST) {
      std::cerr << "fault link-out: symlink: " << strerror(errno) << "\n";
    }
  }
  if (op == "save" && saves == 1 && fault.Here(me, InjectedFault::kMoveScratch)) {
    const std::string work = ckptspec::ParentDir(ckptspec::ParentDir(FirstTensorFile(request)));
    if (rename(work.c_str(), (work + ".moved").c_str()) != 0 ||
        symlink(fault.path.c_str(), work.c_str()) != 0) {
      std::cerr << "fault move-scratch: " << strerror(errno) << "\n";
    }
  }
  if (op == "save" && fault.Here(me, InjectedFault::kDaemonSave)) StartDaemon();
  if (op == "save" && fault.Here(me, InjectedFault::kFloodStderr)) {
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 64; ++i)
      std::cerr.write(block.data(), static_cast<std::streamsize>(block.size()));
    std::cerr << std::endl;
  }
  const std::string loaded = op == "load" ? FirstTensorFile(request) : "";
  if (!loaded.empty() && fault.Here(me, InjectedFault::kFifoLoad)) {
    unlink(loaded.c_str());
    if (mkfifo(loaded.c_str(), 0600) != 0)
      std::cerr << "fault fifo-load: " << strerror(errno) << "\n";
  }
  if (!loaded.empty() && fault.Here(me, InjectedFault::kLinkLoad)) {
    unlink(loaded.c_str());
    if (symlink(fault.path.c_str(), loaded.c_str()) != 0)
      std::cerr << "fault link-load: " << strerror(errno) << "\n";
  }
}

// The reply this rank prints for `op`, with the injected output faults applied.
std::string Output(json reply, const std::string& op, int me, int world, const Fault& fault) {
  if (op == "save" && fault.rank == me) {
    switch (fault.kind) {
      case InjectedFault::kHangSave:
        std::cerr << "fault hang-save: not replying\n";
        for (;;) pause();
      case InjectedFault::kGarbage:
        return "this is not JSON";
      case InjectedFault::kWrongRank:
        reply["rank"] = (me + 1) % world;
        break;
      case InjectedFault::kWrongRequest:
        reply["id"] = reply.value("id", 0) + 1;
        break;
      case InjectedFault::kMalformed:
        reply.erase("ok");
        break;
      default:
        break;
    }
  }
  if (op == "load" && fault.Here(me, InjectedFault::kDeepReply) && reply.value("ok", false)) {
    const size_t depth = 200000;
    reply["common"] = nullptr;
    const std::string line = ckptspec::DumpLine(reply);
    const size_t at = line.find("\"common\":null");
    std::string deep;
    deep.reserve(depth * 6 + 1);
    for (size_t i = 0; i < depth; ++i) deep += "{\"a\":";
    deep += "1" + std::string(depth, '}');
    return line.substr(0, at) + "\"common\":" + deep +
           line.substr(at + std::string("\"common\":null").size());
  }
  return ckptspec::DumpLine(reply);
}

// The command line.
struct Flags {
  std::string fault_name = "none";
  Fault fault;
  bool no_reset = false, no_poll = false, no_packed = false;
  std::string mutant;
  bool framework = false, tracker_before_sync = false, deferred_async = false;
};

// The ids of the catalog mutants that replace only the engine, comma-separated.
std::string EngineMutantIds() {
  std::string engine_mutants;
  for (const ckptspec::MutantInfo& m : ckptspec::MutantCatalog()) {
    if (ReplacesOnlyTheEngine(m.parts(0))) {
      engine_mutants += (engine_mutants.empty() ? "" : ", ") + std::string(m.id);
    }
  }
  return engine_mutants;
}

// Declares every option and flag on `app`, each parsed into its field of `flags`.
void AddFlags(CLI::App* app, Flags* flags) {
  app->add_option("--fault", flags->fault_name, "misbehave: " + ckptspec::InjectedFaultNames())
      ->capture_default_str();
  app->add_option("--fault-rank", flags->fault.rank, "the rank that misbehaves")
      ->capture_default_str();
  app->add_option("--fault-path", flags->fault.path, "where the hostile faults' links point");
  app->add_flag(
      "--no-reset", flags->no_reset,
      "do not declare the reset capability (the harness then starts processes per engine)");
  app->add_flag("--no-poll", flags->no_poll,
                "do not declare the poll capability (the harness then completes async saves only "
                "at finalize, save or load, and sends no in-place updates)");
  app->add_flag("--no-packed", flags->no_packed,
                "do not declare the packed capability (the harness then passes every entry "
                "through a file of its own)");
  app->add_option("--mutant", flags->mutant,
                  "serve with this catalog mutant's engine (the id or name of a mutant that "
                  "replaces only the engine: " +
                      EngineMutantIds() + "; any mutant with --framework" +
                      "); implies --deferred-async, so that a mutant reading the adapter's save "
                      "input never races the poll that writes into it");
  app->add_flag("--framework", flags->framework,
                "be a framework adapter (docs/PROTOCOL.md, \"Framework adapters\"): the spec's own "
                "framework saving through the reference target; with --mutant, through every part "
                "the mutant replaces (any catalog mutant)");
  app->add_flag("--tracker-before-sync", flags->tracker_before_sync,
                "a crash-consistency mutant: skip the fsyncs inside iteration directories until "
                "the tracker is durable, then sync(2) everything (adapters/builtin/"
                "tracker_before_sync_env.h); P13's crash states must catch it");
  app->add_flag("--deferred-async", flags->deferred_async,
                "write an async save inside the poll, finalize, save or load that completes it "
                "(default: on a background thread at once)");
}

// This rank's place from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; false, saying why, if bad.
bool ReadRankEnvironment(int* me, int* world, int* port, const char** address) {
  *address = std::getenv("MASTER_ADDR");
  if (!EnvInt("RANK", me) || !EnvInt("WORLD_SIZE", world) || *world < 1 || *me >= *world ||
      (*world > 1 && (!EnvInt("MASTER_PORT", port) || *address == nullptr))) {
    std::cerr << "reference adapter: needs RANK < WORLD_SIZE and, for WORLD_SIZE > 1, MASTER_ADDR "
                 "and MASTER_PORT in the environment\n";
    return false;
  }
  return true;
}

// The reference adapter's options under `flags` (the mutant's engine aside); the Envs outlive it.
ckptspec::ReferenceAdapterOptions AdapterOptions(const Flags& flags, int world,
                                                 ckptspec::Env* crashing,
                                                 ckptspec::Env* tracker_first) {
  const Fault& fault = flags.fault;
  ckptspec::ReferenceAdapterOptions options;
  options.world_size = world;
  options.env = fault.Here(0, InjectedFault::kCrashSave) ? crashing
                : flags.tracker_before_sync              ? tracker_first
                                                         : ckptspec::Env::Posix();
  if (fault.kind == InjectedFault::kWrongSize) options.wrong_size_rank = fault.rank;
  // A fault keeps state of its own across calls (counts of saves and writes) that reset would not
  // forget: only a faultless adapter declares reset.
  options.reset = !flags.no_reset && fault.kind == InjectedFault::kNone;
  options.poll = !flags.no_poll;
  options.packed = !flags.no_packed;
  options.async_execution = flags.deferred_async || !flags.mutant.empty()
                                ? ckptspec::AsyncExecution::kDeferred
                                : ckptspec::AsyncExecution::kThread;
  return options;
}

// Serves --mutant: its parts (framework) or its engine; false, saying why, if it cannot be served.
bool UseMutant(const Flags& flags, ckptspec::ReferenceAdapterOptions* options,
               ckptspec::FrameworkAdapterOptions* framework_options) {
  const std::string& mutant = flags.mutant;
  if (flags.framework && !mutant.empty()) {
    const ckptspec::MutantInfo* info = ckptspec::FindMutant(mutant);
    if (info == nullptr) {
      std::cerr << "--mutant: '" << mutant << "' is not a catalog mutant\n";
      return false;
    }
    framework_options->parts = info->parts;
  } else if (!mutant.empty()) {
    const ckptspec::MutantInfo* info = ckptspec::FindMutant(mutant);
    ckptspec::ReplacedParts parts;
    if (info != nullptr) parts = info->parts(0);
    if (info == nullptr || !ReplacesOnlyTheEngine(parts)) {
      std::cerr << "--mutant: '" << mutant
                << "' is not a catalog mutant that replaces only the engine\n";
      return false;
    }
    options->make_engine = parts.engine;
  }
  return true;
}

// Serves one request of every rank (rank 0's first), one reply each.
using ServeFn = std::function<std::vector<json>(const std::vector<json>&)>;

// A faultless peer's turn: relays `line` through rank 0 and prints the reply; true at shutdown.
bool RelayThroughRankZero(ckptspec::Star& star, const std::string& line) {
  const ckptspec::Status sent = star.Send(0, line);
  if (!sent.ok()) Abandon(sent);
  bool shutdown = false;
  std::string reply_line;
  ReceiveRelay(star, &shutdown, &reply_line);
  std::cout << reply_line << std::endl;
  return shutdown;
}

// Rank 0's turn: serves its `request` with every peer's, relays the peers' replies; its own reply.
json ServeEveryRank(ckptspec::Star& star, int world, const json& request, const std::string& op,
                    const ServeFn& serve) {
  std::vector<json> requests = {request};
  for (int peer = 1; peer < world; ++peer) {
    std::string peer_line;
    const ckptspec::Status got = star.Receive(peer, &peer_line);
    if (!got.ok()) Abandon(got);
    requests.push_back(ParseOrNull(peer_line));
  }
  std::vector<json> replies = serve(requests);
  for (int peer = 1; peer < world; ++peer) {
    const ckptspec::Status sent = star.Send(peer, Relay(op == "shutdown", replies[peer]));
    if (!sent.ok()) std::cerr << "reference adapter: " << sent.ToString() << "\n";
  }
  return replies[0];
}

// A faulty peer's turn: sends `line` to rank 0 (or dies mid-save: crash-save); the reply relayed.
json SendAsFaultyPeer(ckptspec::Star& star, const std::string& line, const std::string& op, int me,
                      const Fault& fault) {
  ckptspec::Status s = star.Send(0, line);
  if (op == "save" && fault.Here(me, InjectedFault::kCrashSave)) {
    std::cerr << "fault crash-save: killing myself mid-save\n" << std::flush;
    kill(getpid(), SIGKILL);
  }
  if (!s.ok()) Abandon(s);
  bool shutdown = false;  // a faulty peer goes by its own request's op
  std::string reply_line;
  ReceiveRelay(star, &shutdown, &reply_line);
  return ParseOrNull(reply_line);
}

// Answers the request lines of stdin until its end or a shutdown; the exit status.
int ServeLines(ckptspec::Star& star, int me, int world, const Fault& fault, const ServeFn& serve) {
  // Only a rank that commits a fault needs its request and reply as JSON (Attack, Output).
  const bool faulty = fault.kind != InjectedFault::kNone && fault.rank == me;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (me != 0 && !faulty) {
      if (RelayThroughRankZero(star, line)) return 0;
      continue;
    }
    const json request = ParseOrNull(line);
    const std::string op = OpOf(request);
    if (op == "save" && fault.Here(me, InjectedFault::kExitSave)) {
      std::cerr << "fault exit-save: exiting with status 3\n";
      return 3;
    }
    const json reply = me == 0 ? ServeEveryRank(star, world, request, op, serve)
                               : SendAsFaultyPeer(star, line, op, me, fault);
    Attack(request, op, me, fault);
    std::cout << Output(reply, op, me, world, fault) << std::endl;
    if (op == "shutdown") return 0;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Buffered request lines: stdin synchronised with C stdio is read a character at a time. Set
  // before any use of the standard streams.
  std::ios::sync_with_stdio(false);
  CLI::App app{"The reference engine behind the ckptspec adapter protocol (one process per rank)"};
  Flags flags;
  AddFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  if (!ckptspec::ParseInjectedFault(flags.fault_name, &flags.fault.kind)) {
    std::cerr << "--fault: unknown fault '" << flags.fault_name
              << "' (known: " << ckptspec::InjectedFaultNames() << ")\n";
    return 2;
  }
  int me = 0, world = 0, port = 0;
  const char* address = nullptr;
  if (!ReadRankEnvironment(&me, &world, &port, &address)) return 2;
  ckptspec::Star star;
  const ckptspec::Status opened =
      star.Open(me, world, address ? address : "", port, kRendezvousTimeout_s);
  if (!opened.ok()) Abandon(opened);

  ckptspec::CrashingEnv crashing(ckptspec::Env::Posix(), 2);
  ckptspec::TrackerBeforeSyncEnv tracker_first(ckptspec::Env::Posix(), ckptspec::kTrackerFileName);
  ckptspec::ReferenceAdapterOptions options =
      AdapterOptions(flags, world, &crashing, &tracker_first);
  ckptspec::FrameworkAdapterOptions framework_options;
  framework_options.world_size = world;
  framework_options.reset = options.reset;
  if (!UseMutant(flags, &options, &framework_options)) return 2;
  ckptspec::ReferenceAdapter adapter(std::move(options));
  ckptspec::FrameworkAdapter framework_adapter(std::move(framework_options));
  const ServeFn serve = [&](const std::vector<json>& requests) {
    return flags.framework ? framework_adapter.Serve(requests) : adapter.Serve(requests);
  };
  return ServeLines(star, me, world, flags.fault, serve);
}
