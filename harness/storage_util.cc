#include "harness/storage_util.h"

#include <algorithm>
#include <sstream>

namespace ckptspec {

namespace {

constexpr uint64_t kMaxFile = uint64_t{1} << 30;

Status ReadDir(Env* env, const std::string& dir, const std::string& prefix, StorageTree* tree) {
  std::vector<std::string> names;
  CKPTSPEC_RETURN_IF_ERROR(env->GetChildren(dir, &names));
  if (names.empty() && !prefix.empty()) (*tree)[prefix] = "";
  for (const std::string& name : names) {
    const std::string path = JoinPath(dir, name);
    bool is_dir = false;
    CKPTSPEC_RETURN_IF_ERROR(env->IsDirectory(path, &is_dir));
    if (is_dir) {
      CKPTSPEC_RETURN_IF_ERROR(ReadDir(env, path, prefix + name + "/", tree));
    } else {
      CKPTSPEC_RETURN_IF_ERROR(ReadFileToString(env, path, kMaxFile, &(*tree)[prefix + name]));
    }
  }
  return Status::OK();
}

}  // namespace

Status ReadTree(Env* env, const std::string& root, StorageTree* tree) {
  tree->clear();
  return ReadDir(env, root, "", tree);
}

Status WriteTree(Env* env, const std::string& root, const StorageTree& tree) {
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, root));
  for (const auto& [path, content] : tree) {
    const bool is_dir = !path.empty() && path.back() == '/';
    const std::string full = JoinPath(root, is_dir ? path.substr(0, path.size() - 1) : path);
    const std::string dir = is_dir ? full : ParentDir(full);
    CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, dir));
    if (!is_dir) CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, full, content));
  }
  // Make every directory entry durable, innermost first.
  std::vector<std::string> dirs;
  for (const auto& [path, content] : tree) {
    std::string p = path;
    if (!p.empty() && p.back() == '/') {
      p.pop_back();
      dirs.push_back(JoinPath(root, p));
    }
    for (size_t slash = p.rfind('/'); slash != std::string::npos; slash = p.rfind('/')) {
      p = p.substr(0, slash);
      dirs.push_back(JoinPath(root, p));
    }
  }
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return a.size() > b.size() || (a.size() == b.size() && a < b);
  });
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const std::string& d : dirs) CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(d));
  CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(root));
  return env->SyncDir(ParentDir(root));
}

std::string DescribeTree(const StorageTree& tree) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [path, content] : tree) {
    os << (first ? "" : ", ") << path;
    if (path.empty() || path.back() != '/') os << " (" << content.size() << " bytes)";
    first = false;
  }
  return os.str();
}

std::string FirstTreeDifference(const StorageTree& a, const StorageTree& b) {
  for (const auto& [path, content] : a) {
    auto it = b.find(path);
    if (it == b.end()) return "'" + path + "' only in the first tree";
    if (it->second == content) continue;
    size_t i = 0;
    while (i < content.size() && i < it->second.size() && content[i] == it->second[i]) ++i;
    return "'" + path + "' differs at byte " + std::to_string(i) + " (sizes " +
           std::to_string(content.size()) + " and " + std::to_string(it->second.size()) + ")";
  }
  for (const auto& [path, content] : b) {
    if (!a.count(path)) return "'" + path + "' only in the second tree";
  }
  return "";
}

Status RestartOnCopy(const TargetFactory& factory, const TargetOptions& options,
                     TargetUnderTest& from, std::unique_ptr<TargetUnderTest>* out,
                     std::string* described) {
  StorageTree tree;
  CKPTSPEC_RETURN_IF_ERROR(ReadTree(from.storage_env(), from.root(), &tree));
  if (described != nullptr) *described = DescribeTree(tree);
  auto copy = factory.make(options);
  CKPTSPEC_RETURN_IF_ERROR(WriteTree(copy->storage_env(), copy->root(), tree));
  *out = std::move(copy);
  return Status::OK();
}

Status ExpectedAtIteration(const RunSpec& run, int64_t iteration, std::vector<TrainingState>* out) {
  std::vector<TrainingState> saved;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &saved));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&saved, iteration));
  return ExpectedResume(run, saved, run, LoadFlags(), out);
}

}  // namespace ckptspec
