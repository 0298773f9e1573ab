// Writes the fuzz targets' seed corpora from real checkpoints of the reference:
//   seed_tool CORPUS_DIR
// creates CORPUS_DIR/<target>_seed_corpus/ for every target. Per seed run (seed_runs.h), trained
// two iterations and saved by the reference: its metadata cut down to a few keys (CutMetadata) and
// its tracker (metadata_fuzzer), its structure signature (signature_fuzzer), its common state, a
// rank's RNG state and the rerun payload (common_state_fuzzer), and its whole checkpoint
// directory as bundles (checkpoint_dir_fuzzer: templates from the metadata, from the framework,
// two checkpoints). The op_sequence_fuzzer seeds are short job stories written with
// OpInputWriter. dcp_dir_fuzzer's seeds are the DCP and torch_dist fixtures of corpus/dcp/ as
// bundles, and small DCP directories whose chunk geometry disagrees with its tensor in each way
// the readers refuse (formats/dcp_test_writer.h). fs_recording_fuzzer's seeds are logs of the
// record format (crash/recording_log.h) that a checkpointer's moves would leave over the fuzzer's
// snapshot (fuzz/fs_recording_snapshot.h). Run it deliberately when the formats change (never from CI); the corpora are
// committed.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "crash/recording_log.h"
#include "formats/dcp_test_writer.h"
#include "fuzz/bundle.h"
#include "fuzz/fs_recording_snapshot.h"
#include "fuzz/op_input.h"
#include "fuzz/seed_runs.h"
#include "model/rerun_state_machine.h"
#include "model/rng_streams.h"
#include "model/signature_json.h"
#include "harness/harness.h"
#include "targets/reference/format.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

void Die(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "seed_tool: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// Bundle options (bundle.h): bit 4 framework templates, bit 5 verify every iteration.
constexpr uint8_t kMetadataTemplates = 0;
constexpr uint8_t kFrameworkTemplates = 1 << 4;
constexpr uint8_t kVerifyAll = 1 << 5;

// metadata_fuzzer's seeds are real indexes cut down to their first kCutKeys tensors and the
// objects of their first kCutKeys object keys (every rank's): each execution stays small (4-8 KB
// instead of the whole 18-46 KB index; max_len in corpus/metadata_fuzzer.options) while the
// structure (boxes, ranks, files, objects, the common state) is a real save's. (The same cut of
// the signatures ran 2.5 times as fast but reached 5 % fewer edges in 10 minutes, so
// signature_fuzzer keeps whole signatures: docs/FUZZING.md.)
constexpr size_t kCutKeys = 3;

std::string CutMetadata(const std::string& text) {
  CheckpointMetadata m;
  Die(DecodeMetadata(text, "seed metadata", &m));
  if (m.tensors.size() > kCutKeys) m.tensors.resize(kCutKeys);
  std::set<std::string> object_keys;
  std::vector<ObjectEntry> kept;
  for (ObjectEntry& o : m.objects) {
    if (object_keys.size() < kCutKeys) object_keys.insert(o.key);
    if (object_keys.count(o.key)) kept.push_back(std::move(o));
  }
  m.objects = std::move(kept);
  const std::string cut = EncodeMetadata(m);
  CheckpointMetadata again;
  Die(DecodeMetadata(cut, "cut seed metadata", &again));
  return cut;
}

void WriteSeedRun(const SeedRun& seed, uint8_t index, const fs::path& corpus) {
  const RunSpec& run = seed.run;
  std::vector<TrainingState> states;
  Die(InitialStates(run, &states));
  Die(TrainRun(&states, 1));
  std::unique_ptr<TargetUnderTest> target = ReferenceTargetFactory().make(TargetOptions());
  MemEnv& env = *target->mem_env();
  const std::string root = target->root();
  Die(SaveRun(target->target(), run, states, 1, SaveOptions()));
  Bundle bundle;
  const fs::path bundles = corpus / "checkpoint_dir_fuzzer_seed_corpus";
  Die(TrainRun(&states, 1));
  const int64_t iteration = states.front().iteration;
  Die(SaveRun(target->target(), run, states, iteration, SaveOptions()));
  Die(CollectBundle(&env, root, kVerifyAll | kFrameworkTemplates, index, &bundle));
  Write(bundles, seed.name + "_two_checkpoints.bundle", SerializeBundle(bundle));

  // One checkpoint only: the second save into a fresh directory.
  std::unique_ptr<TargetUnderTest> single = ReferenceTargetFactory().make(TargetOptions());
  Die(SaveRun(single->target(), run, states, iteration, SaveOptions()));
  Die(CollectBundle(single->mem_env(), single->root(), kMetadataTemplates, index, &bundle));
  Write(bundles, seed.name + "_metadata.bundle", SerializeBundle(bundle));
  bundle.options = kFrameworkTemplates;
  Write(bundles, seed.name + "_framework.bundle", SerializeBundle(bundle));

  const std::string dir = root + "/" + IterationDirName(iteration);
  std::string metadata, tracker;
  Die(ReadFileToString(&env, dir + "/" + kMetadataFileName, 1 << 26, &metadata));
  Die(ReadFileToString(&env, root + "/" + kTrackerFileName, 1 << 10, &tracker));
  Write(corpus / "metadata_fuzzer_seed_corpus", seed.name + "_first_keys.json",
        CutMetadata(metadata));
  Write(corpus / "metadata_fuzzer_seed_corpus", seed.name + "_tracker.txt", tracker);

  std::vector<ShardedStateDict> dicts;
  Die(target->target().framework().ToStateDicts(run.layout, states, run.sharding, &dicts));
  GlobalSignature signature;
  for (size_t r = 0; r < dicts.size(); ++r)
    signature.ranks.push_back(SignatureOf(r, dicts[r], true));
  Write(corpus / "signature_fuzzer_seed_corpus", seed.name + ".json",
        SignatureToJson(signature).dump());

  const fs::path common = corpus / "common_state_fuzzer_seed_corpus";
  Write(common, seed.name + "_common.json", dicts[0].common->dump());
  Write(common, seed.name + "_rng.json", RankRngStateToJson(states.front().rng[0]).dump());
  nlohmann::json payload;
  Die(CheckpointPayload(states.front().rerun, &payload));
  Write(common, seed.name + "_rerun.json", payload.dump());
}

// The first run seed (at size 50) whose module 0 follows the torch.optim freezing family, which
// Unfreeze needs.
uint64_t TorchOptimRunSeed() {
  for (uint64_t seed = 1;; ++seed) {
    const std::string bytes = OpInputWriter().Run(seed, 50).Finish();
    FuzzedDataProvider input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const std::optional<RunSpec> run = ReadRun(&input);
    if (run && run->configs[0].optimizer.freeze_family == FreezeFamily::kTorchOptim) return seed;
  }
}

// Job stories for op_sequence_fuzzer (op_input.h): the run seeds pick small generated runs.
void WriteOpSequences(const fs::path& corpus) {
  const fs::path dir = corpus / "op_sequence_fuzzer_seed_corpus";
  Write(dir, "train_save_restart",
        OpInputWriter()
            .Run(1, 10)
            .Train(2)
            .Save(false, false)
            .Train(1)
            .RestartSame()
            .Train(1)
            .Finish());
  Write(dir, "async_save_finalize_crash",
        OpInputWriter()
            .Run(2, 20)
            .Train(1)
            .Save(true, true)
            .Train(2)
            .Finalize()
            .Crash(5)
            .RestartSame()
            .Finish());
  Write(dir, "crash_after_save_other_layout",
        OpInputWriter().Run(3, 30).Train(3).Crash(-1).RestartOther(true, 11, 0).Train(1).Finish());
  Write(dir, "rerun_fault_save_exit",
        OpInputWriter()
            .Run(4, 40)
            .Train(2)
            .RerunFault()
            .Save(false, false)
            .RestartSame()
            .Train(1)
            .Finish());
  Write(dir, "freeze_cached_plan",
        OpInputWriter()
            .Run(5, 50)
            .Train(1)
            .Save(false, true)
            .Freeze(0, 1)
            .Train(1)
            .Save(false, true)
            .RestartSame()
            .Finish());
  Write(dir, "unfreeze_after_restart",
        OpInputWriter()
            .Run(TorchOptimRunSeed(), 50)
            .Train(2)
            .Freeze(0, 1)
            .Save(false, false)
            .RestartSame()
            .Unfreeze(0, 0)
            .Train(1)
            .Save(true, false)
            .RestartSame()
            .Finish());
  Write(dir, "heal_after_freeze",
        OpInputWriter()
            .Run(8, 50)
            .Train(2)
            .Save(true, false)
            .Freeze(0, 1)
            .Train(1)
            .Heal()
            .Train(1)
            .Save(false, false)
            .RestartSame()
            .Finish());
  Write(dir, "add_parameter_flags",
        OpInputWriter()
            .Run(6, 60)
            .Train(2)
            .Save(true, false)
            .Train(1)
            .RestartAddParameter(0, true)
            .Save(false, false)
            .RestartOther(false, 7, 0x06)
            .Finish());
  Write(dir, "pending_async_lost_in_crash",
        OpInputWriter()
            .Run(7, 70)
            .Save(false, false)
            .Train(1)
            .Save(true, false)
            .Crash(0)
            .RestartOther(true, 3, 0x20)
            .Finish());
}

// A DCP directory holding tensor 'w' of `size` in `chunks` (each chunk's item 16 bytes of junk:
// the geometry is what these seeds are about) as a bundle.
std::string DcpBundle(const std::vector<int64_t>& size,
                      const std::vector<dcp_test::Chunk>& chunks) {
  dcp_test::Index index;
  index.tensors.push_back({"w", "float32", size, chunks});
  Bundle bundle;
  std::string& data = bundle.files["__0_0.distcp"];
  for (const dcp_test::Chunk& c : chunks) {
    index.storage.push_back(
        {"w", c.offsets, "__0_0.distcp", static_cast<int64_t>(data.size()), 16});
    data += std::string(16, 'x');
  }
  bundle.files[".metadata"] = dcp_test::EncodeMetadata(index);
  return SerializeBundle(bundle);
}

void WriteDcpSeeds(const fs::path& corpus) {
  const fs::path dir = corpus / "dcp_dir_fuzzer_seed_corpus";
  for (const fs::directory_entry& fixture : fs::directory_iterator(corpus / "dcp")) {
    if (!fixture.is_directory()) continue;
    Bundle bundle;
    Die(CollectBundle(Env::Posix(), fixture.path().string(), 0, 0, &bundle));
    Write(dir, fixture.path().filename().string() + ".bundle", SerializeBundle(bundle));
  }
  using dcp_test::Chunk;
  Write(dir, "geometry_fewer_axes.bundle",
        DcpBundle({8, 8}, {Chunk{{0, 0}, {4, 8}}, Chunk{{4}, {4, 8}}}));
  Write(dir, "geometry_nine_axes.bundle",
        DcpBundle({8, 8}, {Chunk{{0, 0}, {8, 8}},
                           Chunk{{0, 0, 0, 0, 0, 0, 0, 0, 0}, {8, 8, 1, 1, 1, 1, 1, 1, 1}}}));
  Write(dir, "geometry_many_axes.bundle",
        DcpBundle(std::vector<int64_t>(70, 1),
                  {Chunk{std::vector<int64_t>(70, 0), std::vector<int64_t>(70, 1)}}));
  Write(dir, "geometry_past_end.bundle",
        DcpBundle({8, 8}, {Chunk{{0, 0}, {4, 8}}, Chunk{{4, 6}, {4, 8}}}));
  Write(dir, "geometry_negative.bundle",
        DcpBundle({8, 8}, {Chunk{{-4, 0}, {4, 8}}, Chunk{{4, 0}, {4, 8}}}));
  Write(dir, "geometry_unordered_overlap.bundle",
        DcpBundle({10}, {Chunk{{0}, {3}}, Chunk{{5}, {5}}, Chunk{{1}, {2}}}));
}

// One process's log over FsRecordingFuzzSnapshot(): operations numbered in the order given.
class RecordingWriter {
 public:
  FsOp& Add(FsOpKind kind, FileId file, const std::string& path) {
    FsOp op;
    op.seq = ops_.size();
    op.pid = 100;
    op.kind = kind;
    op.file = file;
    op.path = path;
    ops_.push_back(op);
    return ops_.back();
  }
  FsOp& Entry(FsOpKind kind, FileId file, FileId dir, const std::string& name,
              const std::string& path) {
    FsOp& op = Add(kind, file, path);
    op.dir = dir;
    op.name = name;
    return op;
  }
  FsOp& Write(FileId file, uint64_t offset, const std::string& data, const std::string& path) {
    FsOp& op = Add(FsOpKind::kWrite, file, path);
    op.offset = offset;
    op.data = data;
    return op;
  }
  FsOp& Move(FsOpKind kind, FileId file, FileId dir, const std::string& name, FileId dir2,
             const std::string& name2) {
    FsOp& op = Entry(kind, file, dir, name, name);
    op.dir2 = dir2;
    op.name2 = name2;
    op.path2 = name2;
    return op;
  }
  std::string Log() const {
    std::string log;
    for (const FsOp& op : ops_) log += EncodeRecordingRecord(op);
    std::vector<FsOp> again;
    Die(ParseRecordingLog(log, "seed log", &again));
    return log;
  }

 private:
  std::vector<FsOp> ops_;
};

void WriteFsRecordingSeeds(const fs::path& corpus) {
  const fs::path dir = corpus / "fs_recording_fuzzer_seed_corpus";
  const InitialTree& snapshot = FsRecordingFuzzSnapshot();
  const FileId root = snapshot.root, a{1, 2}, f{1, 3}, g{1, 4}, e{1, 5};
  const FileId tmp{1, 6}, b{1, 7}, x{1, 8};
  {  // The atomic save: a temporary written and synced, renamed over a file, its directory synced.
    RecordingWriter w;
    w.Entry(FsOpKind::kCreate, tmp, a, ".tmp", "a/.tmp");
    w.Write(tmp, 0, "new metadata", "a/.tmp");
    w.Add(FsOpKind::kFsync, tmp, "a/.tmp");
    w.Move(FsOpKind::kRename, tmp, a, ".tmp", a, "f").replaced = f;
    w.Add(FsOpKind::kFsync, a, "a");
    Write(dir, "atomic_rename.bin", w.Log());
  }
  {  // No sync at all: a new file, an overwrite, a truncate, an unlink.
    RecordingWriter w;
    w.Entry(FsOpKind::kCreate, tmp, root, "h", "h");
    w.Write(tmp, 0, "rank 0 shard", "h");
    w.Write(g, 4, "XYZ", "g");
    w.Add(FsOpKind::kTruncate, g, "g").length = 6;
    w.Entry(FsOpKind::kUnlink, f, a, "f", "a/f");
    Write(dir, "no_sync.bin", w.Log());
  }
  {  // A directory made and filled, a hard link, an empty directory removed, sync(2).
    RecordingWriter w;
    w.Entry(FsOpKind::kMkdir, b, root, "b", "b");
    w.Entry(FsOpKind::kCreate, x, b, "x", "b/x");
    w.Write(x, 0, "data of x", "b/x");
    w.Add(FsOpKind::kFdatasync, x, "b/x");
    w.Move(FsOpKind::kLink, x, b, "x", root, "y");
    w.Entry(FsOpKind::kRmdir, e, root, "e", "e");
    w.Add(FsOpKind::kSyncAll, FileId(), ".");
    Write(dir, "mkdir_link_sync.bin", w.Log());
  }
  {  // Storage faults: an injected ENOSPC, a short write, a failing fsync.
    RecordingWriter w;
    FsOp& failed = w.Write(g, 0, "", "g");
    failed.err = 28;
    failed.injected = true;
    w.Write(g, 10, "half", "g").injected = true;
    FsOp& fsync = w.Add(FsOpKind::kFsync, g, "g");
    fsync.err = 5;
    fsync.injected = true;
    w.Write(f, 5, " world", "a/f");
    Write(dir, "faults.bin", w.Log());
  }
  {  // A directory renamed while a file in it is written (the write follows the inode).
    RecordingWriter w;
    w.Move(FsOpKind::kRename, a, root, "a", root, "c");
    w.Write(f, 0, "HELLO", "c/f");
    w.Add(FsOpKind::kFsync, root, ".");
    w.Add(FsOpKind::kFsync, f, "c/f");
    Write(dir, "directory_rename.bin", w.Log());
  }
  {  // What the interposer could not follow: the recording is incomplete.
    RecordingWriter w;
    w.Entry(FsOpKind::kCreate, tmp, root, "m", "m");
    w.Add(FsOpKind::kUnseen, tmp, "m").detail = "mmap of a file under the root";
    Write(dir, "unseen.bin", w.Log());
  }
}

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  using namespace ckptspec;
  if (argc != 2) {
    std::fprintf(stderr, "usage: seed_tool CORPUS_DIR\n");
    return 2;
  }
  for (size_t i = 0; i < SeedRuns().size(); ++i) {
    WriteSeedRun(SeedRuns()[i], static_cast<uint8_t>(i), argv[1]);
  }
  WriteOpSequences(argv[1]);
  WriteDcpSeeds(argv[1]);
  WriteFsRecordingSeeds(argv[1]);
  std::printf("seed corpora written under %s\n", argv[1]);
  return 0;
}
