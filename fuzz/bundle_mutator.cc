#include "fuzz/bundle_mutator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/bundle.h"
#include "model/json_util.h"
#include "targets/reference/format.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// As the reference writes metadata (sorted members, one-space indentation); a byte-mutated string
// that is no longer UTF-8 gets U+FFFD where the bytes broke.
std::string Dump(const json& doc) {
  return doc.dump(1, ' ', false, json::error_handler_t::replace);
}

class Mutator {
 public:
  Mutator(unsigned seed, RawMutator raw) : rng_(seed), raw_(raw) {}

  size_t Below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }
  bool OneIn(size_t n) { return Below(n) == 0; }

  // The raw mutator on a string, growing it by at most `extra` bytes.
  void RawMutate(std::string* bytes, size_t extra) {
    std::vector<uint8_t> buffer(bytes->begin(), bytes->end());
    buffer.resize(bytes->size() + extra);
    const size_t size = raw_(buffer.data(), bytes->size(), buffer.size());
    bytes->assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(size));
  }

  bool MutateJsonFile(Bundle* bundle) {
    std::vector<const std::string*> candidates;
    for (const auto& [path, content] : bundle->files) {
      if (EndsWith(path, ".json")) candidates.push_back(&path);
    }
    if (candidates.empty()) return false;
    const std::string path = *candidates[Below(candidates.size())];
    std::string& content = bundle->files[path];
    json doc;
    if (!ParseJson(content, JsonLimits(), &doc).ok()) return false;
    std::vector<json::json_pointer> nodes;
    std::vector<std::string> strings;
    Collect(doc, json::json_pointer(), &nodes, &strings);
    json& node = doc[nodes[Below(nodes.size())]];
    MutateNode(&node, strings);
    content = Dump(doc);
    if (!OneIn(4)) SyncMetadataChecksum(bundle, DirOf(path));
    return true;
  }

  bool MutateDataFile(Bundle* bundle) {
    std::vector<const std::string*> candidates;
    for (const auto& [path, content] : bundle->files) {
      if (!EndsWith(path, ".json") && !EndsWith(path, kMetadataChecksumFileName) &&
          !EndsWith(path, kTrackerFileName) && !EndsWith(path, "/")) {
        candidates.push_back(&path);
      }
    }
    if (candidates.empty()) return false;
    const std::string path = *candidates[Below(candidates.size())];
    RawMutate(&bundle->files[path], 64);
    if (OneIn(2)) SyncDataChecksums(bundle, DirOf(path));
    return true;
  }

  bool MutateTracker(Bundle* bundle) {
    std::vector<int64_t> iterations;
    for (const auto& [path, content] : bundle->files) {
      int64_t iteration = 0;
      if (ParseIterationDirName(DirOf(path), &iteration)) iterations.push_back(iteration);
    }
    std::string& tracker = bundle->files[kTrackerFileName];
    if (!iterations.empty() && !OneIn(3)) {
      tracker = EncodeTracker(iterations[Below(iterations.size())]);
    } else {
      RawMutate(&tracker, 8);
    }
    return true;
  }

  bool MutateDirectory(Bundle* bundle) {
    if (bundle->files.empty()) return false;
    const auto chosen = Pick(bundle->files);
    const std::string path = chosen->first;
    switch (Below(3)) {
      case 0:
        bundle->files.erase(chosen);
        return true;
      case 1: {
        // Renamed (over whatever had the name) within its directory, to a sibling's name or a
        // mutated one.
        std::string name = BaseOf(Pick(bundle->files)->first);
        if (OneIn(2)) RawMutate(&name, 4);
        const std::string renamed = JoinRelative(DirOf(path), name);
        if (name.empty() || renamed == path) return false;
        std::string content = std::move(chosen->second);
        bundle->files.erase(chosen);
        bundle->files[renamed] = std::move(content);
        return true;
      }
      default: {
        // Copied into another (possibly new) iteration's directory.
        const std::string copy =
            JoinRelative(IterationDirName(static_cast<int64_t>(Below(4))), BaseOf(path));
        if (bundle->files.count(copy) != 0 || bundle->files.size() >= kMaxBundleFiles) return false;
        bundle->files[copy] = chosen->second;
        return true;
      }
    }
  }

  void MutateOptions(Bundle* bundle) {
    if (OneIn(2)) {
      bundle->options ^= static_cast<uint8_t>(1u << Below(6));
    } else {
      bundle->run = static_cast<uint8_t>(Below(8));
    }
  }

 private:
  StorageTree::iterator Pick(StorageTree& files) {
    auto it = files.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(Below(files.size())));
    return it;
  }

  static bool EndsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  static std::string DirOf(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
  }
  static std::string BaseOf(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }
  static std::string JoinRelative(const std::string& dir, const std::string& name) {
    return dir.empty() ? name : dir + "/" + name;
  }

  static void Collect(const json& node, const json::json_pointer& at,
                      std::vector<json::json_pointer>* nodes, std::vector<std::string>* strings) {
    nodes->push_back(at);
    if (node.is_string()) strings->push_back(node.get<std::string>());
    if (node.is_object()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        strings->push_back(it.key());
        Collect(it.value(), at / it.key(), nodes, strings);
      }
    } else if (node.is_array()) {
      for (size_t i = 0; i < node.size(); ++i) Collect(node[i], at / i, nodes, strings);
    }
  }

  json Number(const json& node) {
    // Unsigned arithmetic: the neighbours of a boundary wrap instead of overflowing.
    const uint64_t v = node.is_number_integer() ? node.get<uint64_t>() : 0;
    switch (Below(12)) {
      case 0:
        return 0;
      case 1:
        return 1;
      case 2:
        return -1;
      case 3:
        return static_cast<int64_t>(v + 1);
      case 4:
        return static_cast<int64_t>(v - 1);
      case 5:
        return static_cast<int64_t>(v * 2);
      case 6:
        return int64_t{1} << 31;
      case 7:
        return int64_t{1} << 32;
      case 8:
        return int64_t{1} << 53;
      case 9:
        return std::numeric_limits<int64_t>::max();
      case 10:
        return std::numeric_limits<uint64_t>::max();
      default:
        return 0.5;
    }
  }

  void MutateNode(json* node, const std::vector<std::string>& strings) {
    if (OneIn(8)) {
      // A value of another type.
      static const json kOthers[] = {nullptr, true, 0, "", json::array(), json::object()};
      *node = kOthers[Below(6)];
      return;
    }
    if (node->is_number()) {
      *node = Number(*node);
    } else if (node->is_string()) {
      std::string s = node->get<std::string>();
      switch (Below(3)) {
        case 0:
          s.clear();
          break;
        case 1:
          RawMutate(&s, 8);
          break;
        default:
          s = strings[Below(strings.size())];
          break;
      }
      *node = s;
    } else if (node->is_array() && !node->empty()) {
      const size_t i = Below(node->size());
      switch (Below(4)) {
        case 0:
          node->erase(i);
          break;
        case 1:
          node->push_back((*node)[i]);
          break;
        case 2:
          node->erase(node->size() - 1);
          break;
        default:
          node->clear();
          break;
      }
    } else if (node->is_object() && !node->empty()) {
      auto it = node->begin();
      std::advance(it, static_cast<std::ptrdiff_t>(Below(node->size())));
      node->erase(it);
    } else if (node->is_boolean()) {
      *node = !node->get<bool>();
    }
  }

  // metadata.xxh3 of `dir` made to match its metadata.json.
  static void SyncMetadataChecksum(Bundle* bundle, const std::string& dir) {
    const auto metadata = bundle->files.find(JoinRelative(dir, kMetadataFileName));
    const auto sum = bundle->files.find(JoinRelative(dir, kMetadataChecksumFileName));
    if (metadata == bundle->files.end() || sum == bundle->files.end()) return;
    sum->second = ChecksumHex(Checksum(metadata->second.data(), metadata->second.size())) + "\n";
  }

  // Every extent of `dir`'s metadata that lies inside its (possibly mutated) file gets the
  // checksum of its current bytes; every file's size is its current size.
  static void SyncDataChecksums(Bundle* bundle, const std::string& dir) {
    const auto metadata = bundle->files.find(JoinRelative(dir, kMetadataFileName));
    if (metadata == bundle->files.end()) return;
    json doc;
    if (!ParseJson(metadata->second, JsonLimits(), &doc).ok()) return;
    if (!doc.is_object() || !doc["files"].is_array()) return;
    std::vector<const std::string*> files;  // the content of each listed file, or null
    for (json& f : doc["files"]) {
      const std::string* file = nullptr;
      if (f.is_object() && f["name"].is_string()) {
        const auto found = bundle->files.find(JoinRelative(dir, f["name"].get<std::string>()));
        if (found != bundle->files.end()) {
          file = &found->second;
          f["size"] = file->size();
        }
      }
      files.push_back(file);
    }
    auto sync = [&files](json& extent) {
      if (!extent.is_object() || !extent["file"].is_number_unsigned() ||
          !extent["byte_offset"].is_number_unsigned() ||
          !extent["byte_size"].is_number_unsigned()) {
        return;
      }
      const uint64_t index = extent["file"].get<uint64_t>();
      const uint64_t offset = extent["byte_offset"].get<uint64_t>();
      const uint64_t size = extent["byte_size"].get<uint64_t>();
      if (index >= files.size() || files[index] == nullptr) return;
      const std::string& bytes = *files[index];
      if (offset > bytes.size() || size > bytes.size() - offset) return;
      extent["xxh3"] = ChecksumHex(Checksum(bytes.data() + offset, size));
    };
    if (doc["tensors"].is_array()) {
      for (json& t : doc["tensors"]) {
        if (!t.is_object() || !t["chunks"].is_array()) continue;
        for (json& chunk : t["chunks"]) sync(chunk);
      }
    }
    if (doc["objects"].is_array()) {
      for (json& o : doc["objects"]) sync(o);
    }
    metadata->second = Dump(doc);
    SyncMetadataChecksum(bundle, dir);
  }

  std::mt19937 rng_;
  RawMutator raw_;
};

size_t Emit(const std::string& bytes, uint8_t* out, size_t max_size) {
  if (bytes.size() > max_size) return 0;
  std::memcpy(out, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace

size_t MutateBundle(uint8_t* data, size_t size, size_t max_size, unsigned seed, RawMutator raw) {
  Mutator m(seed, raw);
  Bundle bundle;
  if (m.OneIn(8) || !ParseBundle(data, size, &bundle)) return raw(data, size, max_size);
  bool changed = false;
  switch (m.Below(8)) {
    case 0:
    case 1:
    case 2:
      changed = m.MutateJsonFile(&bundle);
      break;
    case 3:
    case 4:
      changed = m.MutateDataFile(&bundle);
      break;
    case 5:
      changed = m.MutateTracker(&bundle);
      break;
    case 6:
      changed = m.MutateDirectory(&bundle);
      break;
    default:
      m.MutateOptions(&bundle);
      changed = true;
      break;
  }
  if (changed) {
    const size_t written = Emit(SerializeBundle(bundle), data, max_size);
    if (written > 0) return written;
  }
  return raw(data, size, max_size);
}

size_t CrossOverBundles(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                        uint8_t* out, size_t max_out, unsigned seed) {
  Bundle first, second;
  if (!ParseBundle(a, a_size, &first) || !ParseBundle(b, b_size, &second)) return 0;
  std::mt19937 rng(seed);
  auto coin = [&rng] { return (rng() & 1) != 0; };
  Bundle child;
  child.options = coin() ? first.options : second.options;
  child.run = coin() ? first.run : second.run;
  for (const auto& [path, content] : first.files) {
    const auto other = second.files.find(path);
    if (other != second.files.end()) {
      child.files[path] = coin() ? content : other->second;
    } else if (coin()) {
      child.files[path] = content;
    }
  }
  for (const auto& [path, content] : second.files) {
    if (first.files.count(path) == 0 && coin() && child.files.size() < kMaxBundleFiles) {
      child.files[path] = content;
    }
  }
  return Emit(SerializeBundle(child), out, max_out);
}

}  // namespace ckptspec
