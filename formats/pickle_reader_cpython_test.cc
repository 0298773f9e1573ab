// The safe pickle reader against CPython's own unpickler: generated pickle programs over the
// whitelist (pickle_program_gen.h) and mutations of real pickles (corpus/pickle_fuzzer_seed_corpus:
// DCP .metadata files of torch and megatron-core, torch.save data.pkl files) are read by both, and
// they must agree: the same value (as pickle_dump.h prints it), or both refusing. One Python
// process answers every case (formats/cpython_pickle_oracle.py, over a pipe); it is the pinned
// torch environment's python (CKPTSPEC_PYTHON names another), and without it the tests skip,
// saying why.
//
// What counts as agreeing, by the reader's Status:
//   OK            Python reads the same text (or runs out of its 4 GiB of address space, as it
//                 does for a memo key of billions, which costs the reader nothing);
//   NotSupported  anything: a valid pickle outside the subset the reader reads (pickle_reader.h);
//   any other     Python refuses too.
// A failure prints the pickle as hex and both answers. The default run checks 100 cases of each
// property (200 programs, 100 mutations); RC_PARAMS="max_success=N" (ci/nightly's long property
// suite: 2000) checks N.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "formats/pickle_dump.h"
#include "formats/pickle_globals.h"
#include "formats/pickle_program_gen.h"
#include "formats/pickle_reader.h"

namespace ckptspec {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The python of the torch environment ci/setup builds (adapters/requirements/env_dir.sh names its
// directory; CKPTSPEC_TORCH_ENV picks the requirement file, as for the adapters' tests), or
// CKPTSPEC_PYTHON; "" with `*why` set when there is none.
std::string FindPython(std::string* why) {
  if (const char* python = std::getenv("CKPTSPEC_PYTHON"); python != nullptr && *python != 0) {
    return python;
  }
  const char* env = std::getenv("CKPTSPEC_TORCH_ENV");
  const std::string name = env != nullptr && *env != 0 ? env : "torch-2.14.1";
  const std::string requirements =
      std::string(CKPTSPEC_SOURCE_DIR) + "/adapters/requirements/" + name + ".txt";
  if (!IsFile(requirements)) {
    *why = "no requirement file " + requirements + " (CKPTSPEC_TORCH_ENV=" + name + ")";
    return "";
  }
  const std::string command = ". '" + std::string(CKPTSPEC_SOURCE_DIR) +
                              "/adapters/requirements/env_dir.sh' && ckptspec_env_dir '" + name +
                              "' '" + requirements + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string dir;
  char buffer[512];
  while (pipe != nullptr && std::fgets(buffer, sizeof(buffer), pipe.get()) != nullptr) {
    dir += buffer;
  }
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  if (dir.empty() || !IsFile(dir + "/.ckptspec-complete") || !IsFile(dir + "/bin/python")) {
    *why = "the " + name + " environment (" + dir +
           ") is missing or incomplete; ci/setup builds it, or CKPTSPEC_PYTHON names a python";
    return "";
  }
  return dir + "/bin/python";
}

const char* RoleName(GlobalRole role) {
  switch (role) {
    case GlobalRole::kDataclass:
      return "dataclass";
    case GlobalRole::kStateTuple:
      return "state_tuple";
    case GlobalRole::kEnum:
      return "enum";
    case GlobalRole::kDType:
      return "dtype";
    case GlobalRole::kStorageClass:
      return "storage_class";
    case GlobalRole::kTorchSize:
      return "torch_size";
    case GlobalRole::kLayout:
      return "layout";
    case GlobalRole::kGetattr:
      return "getattr";
    case GlobalRole::kOrderedDict:
      return "ordered_dict";
    case GlobalRole::kPath:
      return "path";
    case GlobalRole::kRebuildTensor:
      return "rebuild_tensor";
    case GlobalRole::kRebuildParameter:
      return "rebuild_parameter";
    case GlobalRole::kOpaque:
      return "opaque";
  }
  return "?";
}

std::string JsonStrings(const std::string_view* items, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) out += (i > 0 ? ", \"" : "\"") + std::string(items[i]) + "\"";
  return out + "]";
}

// The whitelist, as the oracle's first message (the names are plain ASCII).
std::string WhitelistJson() {
  size_t count = 0;
  const PickleClass* all = PickleGlobals(&count);
  std::string out = "{\"globals\": [";
  for (size_t i = 0; i < count; ++i) {
    const PickleClass& c = all[i];
    out += std::string(i > 0 ? ", " : "") + "{\"module\": \"" + c.module + "\", \"name\": \"" +
           c.name + "\", \"role\": \"" + RoleName(c.role) +
           "\", \"fields\": " + JsonStrings(c.fields, c.field_count) +
           ", \"extra\": " + (c.accepts_extra_attributes ? "true" : "false") + "}";
  }
  const PickleClass& tensor = TensorClass();
  return out + "], \"tensor_fields\": " + JsonStrings(tensor.fields, tensor.field_count) + "}";
}

// The Python process and its pipes, started once for the whole binary.
class Oracle {
 public:
  static Oracle& Get() {
    static Oracle oracle;
    return oracle;
  }
  bool available() const { return pid_ > 0; }
  const std::string& why() const { return why_; }

  // CPython's answer for `pickle`: "ok\n<text>", "error\n<exception>" or "resource\n<exception>";
  // "" when the process is gone.
  std::string Ask(const std::string& pickle) {
    if (!Send(pickle)) return "";
    std::string size;
    if (!Receive(4, &size)) return "";
    uint32_t n = 0;
    for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(size[i]);
    std::string reply;
    if (!Receive(n, &reply)) return "";
    return reply;
  }

 private:
  Oracle() {
    const std::string python = FindPython(&why_);
    if (python.empty()) return;
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) {
      why_ = "pipe failed";
      return;
    }
    const std::string script =
        std::string(CKPTSPEC_SOURCE_DIR) + "/formats/cpython_pickle_oracle.py";
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
      execl(python.c_str(), python.c_str(), script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = to_child[1];
    from_ = from_child[0];
    signal(SIGPIPE, SIG_IGN);  // a dead oracle is an error to report, not a signal
    pid_ = pid;
    if (!Send(WhitelistJson())) {
      why_ = python + " did not start";
      pid_ = -1;
    }
  }
  ~Oracle() {
    if (pid_ <= 0) return;
    close(to_);  // the oracle reads end of input and exits
    close(from_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

  bool Send(const std::string& message) {
    const uint32_t n = static_cast<uint32_t>(message.size());
    std::string framed;
    for (int i = 0; i < 4; ++i) framed += static_cast<char>((n >> (8 * i)) & 0xFF);
    framed += message;
    for (size_t done = 0; done < framed.size();) {
      const ssize_t w = write(to_, framed.data() + done, framed.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }
  bool Receive(size_t n, std::string* out) {
    out->resize(n);
    for (size_t done = 0; done < n;) {
      const ssize_t r = read(from_, &(*out)[done], n - done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      done += static_cast<size_t>(r);
    }
    return true;
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string why_;
};

std::string Hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out += kDigits[static_cast<uint8_t>(c) >> 4];
    out += kDigits[static_cast<uint8_t>(c) & 15];
  }
  return out;
}

// Reads `pickle` with both readers: "" when they agree (see the top of the file), else what is
// wrong, with the pickle as hex and both answers. `*outcome` names the case's kind.
std::string Disagreement(const std::string& pickle, std::string* outcome) {
  PickleDocument doc;
  const Status s = ReadPickle(pickle, PickleOptions(), &doc);
  const std::string ours = s.ok() ? "ok\n" + DumpPickleValue(doc, doc.root()) : s.ToString();
  const std::string theirs = Oracle::Get().Ask(pickle);
  const auto failure = [&](const char* what) {
    return std::string(what) + "\npickle (hex): " + Hex(pickle) + "\nckptspec: " + ours +
           "\nPython:   " + theirs;
  };
  if (theirs.empty()) return failure("the Python process did not answer");
  const bool python_reads = theirs.rfind("ok\n", 0) == 0;
  if (s.ok()) {
    if (theirs.rfind("resource\n", 0) == 0) {
      *outcome = "Python ran out of memory";
      return "";
    }
    if (!python_reads) return failure("ckptspec reads a pickle that Python refuses");
    if (ours != theirs) return failure("ckptspec and Python read different values");
    *outcome = "both read";
  } else if (s.code() == Status::Code::kNotSupported) {
    *outcome = python_reads ? "outside the subset, which Python reads" : "outside the subset";
  } else {
    if (python_reads) return failure("ckptspec refuses a pickle that Python reads");
    *outcome = "both refuse";
  }
  return "";
}

// Fails the property's case unless both readers agree on each of `pickles`; tags the case with
// their outcomes.
void CheckAgainstCPython(const std::vector<std::string>& pickles) {
  std::vector<std::string> outcomes;
  for (const std::string& pickle : pickles) {
    std::string outcome;
    const std::string wrong = Disagreement(pickle, &outcome);
    if (!wrong.empty()) RC_FAIL(wrong);
    outcomes.push_back(outcome);
  }
  std::sort(outcomes.begin(), outcomes.end());
  std::string tag;
  for (const std::string& outcome : outcomes) tag += (tag.empty() ? "" : " + ") + outcome;
  RC_TAG(tag);
}

const std::vector<std::string>& SeedPickles() {
  static const std::vector<std::string> kSeeds = [] {
    std::vector<std::string> seeds;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(
             std::string(CKPTSPEC_SOURCE_DIR) + "/corpus/pickle_fuzzer_seed_corpus", error)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      if (!bytes.str().empty()) seeds.push_back(bytes.str());
    }
    return seeds;
  }();
  return kSeeds;
}

// A real pickle with a few bytes flipped, inserted or deleted. The seeds are in one frame (those
// of protocol 4) or none; most of the time the frame's length is set to what the edits left, so
// that the edits, not the frame, are what the readers meet.
rc::Gen<std::string> MutatedSeed() {
  return rc::gen::exec([] {
    std::string bytes = *rc::gen::elementOf(SeedPickles());
    // PROTO, FRAME and its 8-byte length: the head kept out of the edits.
    const bool framed = bytes.size() > 11 && static_cast<uint8_t>(bytes[2]) == 0x95;
    std::string head = framed ? bytes.substr(0, 11) : "";
    if (framed) bytes.erase(0, 11);
    const int edits = *rc::gen::inRange(1, 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = *rc::gen::inRange<size_t>(0, bytes.size());
      switch (*rc::gen::inRange(0, 4)) {
        case 0:
        case 1:
          bytes[at] = static_cast<char>(*rc::gen::arbitrary<uint8_t>());
          break;
        case 2:
          bytes.insert(at, *rc::gen::container<std::string>(*rc::gen::inRange(1, 5),
                                                            rc::gen::arbitrary<char>()));
          break;
        default:
          bytes.erase(at, *rc::gen::inRange<size_t>(1, 9));
          break;
      }
    }
    if (framed && *rc::gen::inRange(0, 4) != 0) {
      for (int i = 0; i < 8; ++i) head[3 + i] = static_cast<char>((bytes.size() >> (8 * i)) & 0xFF);
    }
    return head + bytes;
  });
}

// The properties. Each TEST is what RC_GTEST_PROP would define, behind a check that Python is
// there (a property cannot skip).
// Two programs a case: 200 in the default run.
void GeneratedProgramsReadAlike() {
  CheckAgainstCPython({*pickle_program_gen::PickleProgram(), *pickle_program_gen::PickleProgram()});
}

void MutatedRealPicklesReadAlike() {
  RC_PRE(!SeedPickles().empty());
  CheckAgainstCPython({*MutatedSeed()});
}

TEST(PickleReaderAgainstCPython, GeneratedProgramsReadAlike) {
  if (!Oracle::Get().available()) GTEST_SKIP() << Oracle::Get().why();
  rc::detail::checkGTest(&GeneratedProgramsReadAlike);
}

TEST(PickleReaderAgainstCPython, MutatedRealPicklesReadAlike) {
  if (!Oracle::Get().available()) GTEST_SKIP() << Oracle::Get().why();
  rc::detail::checkGTest(&MutatedRealPicklesReadAlike);
}

TEST(PickleReaderAgainstCPython, TheSeedsReadAlike) {
  if (!Oracle::Get().available()) GTEST_SKIP() << Oracle::Get().why();
  ASSERT_FALSE(SeedPickles().empty());
  for (const std::string& seed : SeedPickles()) {
    std::string outcome;
    EXPECT_EQ(Disagreement(seed, &outcome), "");
  }
}

}  // namespace
}  // namespace ckptspec
