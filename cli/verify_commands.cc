#include "cli/verify_commands.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/input_file.h"
#include "cli/numeric_flag.h"
#include "model/signature_json.h"
#include "model/sharded.h"
#include "model/validate.h"
#include "ondisk/checkpoint_kind.h"
#include "ondisk/dcp_verify.h"
#include "base/confined_view.h"
#include "targets/reference/verify.h"

namespace ckptspec {

void AddLimitFlags(CLI::App* cmd, ResourceLimits* limits) {
  for (const ResourceLimitInfo& info : kResourceLimitTable) {
    AddNumberFlag(cmd, info.flag, &(limits->*info.field), NumberRange<uint64_t>{info.min, info.max},
                  info.meaning);
  }
}

Status CheckCheckpointDirectory(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return Status::InvalidArgument("'" + dir + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("'" + dir + "': " + FileKindName(st.st_mode) +
                                   ", not a checkpoint directory");
  }
  return Status::OK();
}

namespace {

// Reads a plan dump under the limits: a regular file (refused before it is opened otherwise) of
// at most max_metadata_bytes, nested at most max_json_depth, of at most max_chunks entries (the
// bound on the checks' work; the signature's memory is bounded by the text's size).
Status ReadPlan(const std::string& flag, const std::string& path, const ResourceLimits& limits,
                GlobalSignature* sig) {
  CKPTSPEC_RETURN_IF_ERROR(CheckRegularFile(flag, path));
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 &&
      static_cast<uint64_t>(st.st_size) > limits.max_metadata_bytes) {
    return LimitExceeded(path, static_cast<uint64_t>(st.st_size), "bytes",
                         &ResourceLimits::max_metadata_bytes, limits);
  }
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(ReadRegularFile(flag, path, limits.max_metadata_bytes, &text));
  const Status read = ParseSignature(text, limits.json(), sig);  // streamed, one entry at a time
  if (!read.ok()) return Status::InvalidArgument(path + ": " + read.message());
  text = std::string();
  uint64_t entries = 0;
  for (const RankSignature& r : sig->ranks) entries += r.tensors.size() + r.objects.size();
  if (entries > limits.max_chunks) {
    return LimitExceeded(path, entries, "entries", &ResourceLimits::max_chunks, limits);
  }
  return Status::OK();
}

}  // namespace

CLI::App* AddVerifyPlanCommand(CLI::App& app, VerifyPlanOptions* o) {
  CLI::App* cmd =
      app.add_subcommand("verify-plan",
                         "Check a structure signature (plan dump, docs/SIGNATURE.md): P4, P5, P11; "
                         "with --against, P6 against another dump");
  cmd->add_option("FILE", o->file, "the plan dump (JSON)")->required();
  cmd->add_option("--against", o->against,
                  "an earlier dump of the same run: report structure changes (P6)");
  AddLimitFlags(cmd, &o->limits);
  return cmd;
}

int RunVerifyPlanCommand(const VerifyPlanOptions& o, std::ostream& out, std::ostream& err) {
  GlobalSignature sig, before;
  for (const auto& [flag, path, into] : {std::make_tuple("plan dump", &o.file, &sig),
                                         std::make_tuple("--against", &o.against, &before)}) {
    if (path->empty()) continue;
    const Status s = ReadPlan(flag, *path, o.limits, into);
    if (!s.ok()) {
      err << "ckptspec verify-plan: " << s.message() << "\n";
      return 2;
    }
  }
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
      "verify",
      "Check a checkpoint directory (format recognised by content: ckptspec's reference format, "
      "PyTorch DCP, Megatron torch_dist): its index, and its data where asked");
  cmd->add_option("DIR", o->dir,
                  "the checkpoint: a reference root, a DCP directory (.metadata), a torch_dist "
                  "directory or a Megatron root (latest_checkpointed_iteration.txt)")
      ->required();
  cmd->add_flag("--all", o->all_iterations,
                "reference format: check every complete iteration, not only the tracker's");
  cmd->add_flag("--data", o->data,
                "DCP, torch_dist: read every item: its archive, dtype, shape and CRCs");
  cmd->add_flag("--checksums", o->checksums,
                "DCP, torch_dist: print each tensor's layout-independent checksum (reads the "
                "data)");
  cmd->add_flag("--json", o->json, "print the report as JSON");
  AddLimitFlags(cmd, &o->limits);
  return cmd;
}

namespace {

int RunReferenceVerify(const VerifyOptions& o, std::ostream& out, std::ostream& err) {
  VerifyReport report;
  const Status s = VerifyCheckpoint(Env::Posix(), o.dir, o.all_iterations, o.limits, &report);
  if (!s.ok()) {
    err << "ckptspec verify: " << s.message() << "\n";
    return 2;
  }
  if (o.json) {
    nlohmann::json j = {{"format", "reference"},
                        {"dir", o.dir},
                        {"iterations", report.iterations},
                        {"chunks", report.chunks_checked},
                        {"objects", report.objects_checked},
                        {"bytes_read", report.bytes_checked},
                        {"findings", report.findings},
                        {"ok", report.ok()}};
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return report.ok() ? 0 : 1;
  }
  out << o.dir << ": reference format, " << report.iterations.size() << " iteration(s), "
      << report.chunks_checked << " chunks and " << report.objects_checked << " objects, "
      << report.bytes_checked << " bytes checked\n";
  for (const std::string& f : report.findings) out << "  " << f << "\n";
  out << (report.ok() ? "OK\n" : std::to_string(report.findings.size()) + " finding(s)\n");
  return report.ok() ? 0 : 1;
}

void PrintDcpReport(const VerifyOptions& o, const DcpVerifyReport& r, std::ostream& out) {
  out << r.dir << ": " << CheckpointKindName(r.kind);
  if (!r.dcp_version.empty()) out << " (DCP metadata version " << r.dcp_version << ")";
  out << ", " << r.index.tensors << " tensors in " << r.index.chunks << " chunks, "
      << r.index.bytes_items << " bytes items, " << r.index.storage_entries << " storage entries\n";
  if (!r.metadata_extras.empty()) {
    out << "  .metadata attributes beyond DCP's:";
    for (const std::string& e : r.metadata_extras) out << " " << e;
    out << "\n";
  }
  if (r.kind == CheckpointKind::kTorchDist) {
    out << "  torch_dist: sharded backend " << r.sharded_backend << " version "
        << r.sharded_backend_version;
    if (!r.common_backend.empty()) {
      out << ", common backend " << r.common_backend << " version " << r.common_backend_version;
    }
    out << "\n";
    if (!r.common_source.empty()) {
      out << "  common state (" << r.common_source << ") keys:";
      for (const std::string& k : r.common_keys) out << " " << QuotedName(k);
      out << "\n";
    }
  }
  if (r.index.transformed_entries > 0) {
    out << "  " << r.index.transformed_entries
        << " storage entries carry transform descriptors: their bytes are not interpreted\n";
  }
  if (o.data || o.checksums) {
    out << "  data: " << r.items_read << " items, " << r.bytes_read << " bytes read\n";
  }
  for (const std::string& f : r.index.findings) out << "  " << f << "\n";
  for (const std::string& f : r.data_findings) out << "  " << f << "\n";
  for (const TensorChecksum& c : r.checksums) {
    out << "  checksum " << DigestHex(c.checksum) << " " << QuotedName(c.fqn) << " " << c.dtype
        << " " << DimsToString(c.shape) << "\n";
  }
  const size_t findings = r.index.findings.size() + r.data_findings.size();
  out << (r.ok() ? "OK\n" : std::to_string(findings) + " finding(s)\n");
}

}  // namespace

int RunVerifyCommand(const VerifyOptions& o, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Env> view;
  DetectedCheckpoint detected;
  Status s = CheckCheckpointDirectory(o.dir);
  if (s.ok()) s = Env::Posix()->NewConfinedView(o.dir, &view);
  if (s.ok()) s = DetectCheckpoint(view.get(), o.dir, &detected);
  if (!s.ok()) {
    err << "ckptspec verify: " << s.message() << "\n";
    return 2;
  }
  if (detected.kind == CheckpointKind::kReference) return RunReferenceVerify(o, out, err);
  DcpVerifyOptions options;
  options.data = o.data;
  options.checksums = o.checksums;
  options.limits = o.limits;
  DcpVerifyReport report;
  s = VerifyDcpCheckpoint(view.get(), detected, options, &report);
  if (!s.ok()) {
    err << "ckptspec verify: " << s.message() << "\n";
    return 2;
  }
  if (o.json) {
    out << DcpVerifyReportJson(report);
  } else {
    PrintDcpReport(o, report, out);
  }
  return report.ok() ? 0 : 1;
}

}  // namespace ckptspec
