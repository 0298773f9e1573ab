#include "cli/verify_commands.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "model/signature_json.h"
#include "model/validate.h"
#include "targets/reference/verify.h"

namespace ckptspec {
namespace {

// Reads a whole file; false (with a message) when it cannot be read or exceeds 1 GiB.
bool ReadWholeFile(const std::string& path, std::string* out, std::ostream& err) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    err << "cannot open '" << path << "'\n";
    return false;
  }
  const std::streamoff size = in.tellg();
  if (size < 0 || size > (std::streamoff{1} << 30)) {
    err << "'" << path << "' is not a regular file of at most 1 GiB\n";
    return false;
  }
  in.seekg(0);
  out->assign(static_cast<size_t>(size), '\0');
  in.read(out->data(), size);
  return static_cast<bool>(in);
}

bool LoadSignature(const std::string& path, GlobalSignature* sig, std::ostream& err) {
  std::string text;
  if (!ReadWholeFile(path, &text, err)) return false;
  const Status s = ParseSignature(text, sig);
  if (!s.ok()) {
    err << path << ": " << s.message() << "\n";
    return false;
  }
  return true;
}

}  // namespace

CLI::App* AddVerifyPlanCommand(CLI::App& app, VerifyPlanOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "verify-plan", "Check a structure signature (plan dump, docs/SIGNATURE.md): P4, P5, P11; "
                     "with --against, P6 against another dump");
  cmd->add_option("FILE", o->file, "the plan dump (JSON)")->required();
  cmd->add_option("--against", o->against, "an earlier dump of the same run: report structure changes (P6)");
  return cmd;
}

int RunVerifyPlanCommand(const VerifyPlanOptions& o, std::ostream& out, std::ostream& err) {
  GlobalSignature sig;
  if (!LoadSignature(o.file, &sig, err)) return 2;
  size_t entries = 0;
  for (const RankSignature& r : sig.ranks) entries += r.tensors.size() + r.objects.size();
  out << o.file << ": " << sig.ranks.size() << " ranks, " << entries << " entries\n";
  struct Check {
    const char* title;
    std::vector<Violation> violations;
  };
  std::vector<Check> checks = {{"P4 sharding integrity", CheckShardingIntegrity(sig)},
                               {"P5 key injectivity", CheckKeyInjectivity(sig)},
                               {"P11 common state", CheckCommonState(sig)}};
  if (!o.against.empty()) {
    GlobalSignature before;
    if (!LoadSignature(o.against, &before, err)) return 2;
    checks.push_back({"P6 constant structure", DiffStructure(before, sig).ToViolations()});
  }
  bool clean = true;
  for (const Check& c : checks) {
    out << c.title << ": ";
    if (c.violations.empty()) {
      out << "OK\n";
      continue;
    }
    clean = false;
    out << c.violations.size() << " violation(s)\n" << FormatViolations(c.violations);
  }
  return clean ? 0 : 1;
}

CLI::App* AddVerifyCommand(CLI::App& app, VerifyOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a reference-format checkpoint directory: tracker, metadata, checksums, coverage");
  cmd->add_option("DIR", o->dir, "the checkpoint root (holding latest_checkpointed_iteration.txt)")->required();
  cmd->add_flag("--all", o->all_iterations, "check every complete iteration, not only the tracker's");
  return cmd;
}

int RunVerifyCommand(const VerifyOptions& o, std::ostream& out, std::ostream& err) {
  VerifyReport report;
  const Status s = VerifyCheckpoint(Env::Posix(), o.dir, o.all_iterations, &report);
  if (!s.ok()) {
    err << "ckptspec verify: " << s.message() << "\n";
    return 2;
  }
  out << o.dir << ": " << report.iterations.size() << " iteration(s), " << report.chunks_checked
      << " chunks and " << report.objects_checked << " objects, " << report.bytes_checked
      << " bytes checked\n";
  for (const std::string& f : report.findings) out << "  " << f << "\n";
  out << (report.ok() ? "OK\n" : std::to_string(report.findings.size()) + " finding(s)\n");
  return report.ok() ? 0 : 1;
}

}  // namespace ckptspec
