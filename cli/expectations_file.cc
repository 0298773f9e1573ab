#include "cli/expectations_file.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "cli/input_file.h"

namespace ckptspec {

namespace {

// Reads `path` and, completed, its chain of bases; `chain` holds the names read before it.
Status ReadChain(const std::string& path, std::vector<std::string>* chain, Expectations* out) {
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(
      ReadRegularFile("--expectations", path, kMaxExpectationsFileBytes, &text));
  Expectations own;
  CKPTSPEC_RETURN_IF_ERROR(ParseExpectations(text, path, &own));
  chain->push_back(std::filesystem::path(path).filename().string());
  if (!own.extends.empty()) {
    if (std::find(chain->begin(), chain->end(), own.extends) != chain->end()) {
      return Status::InvalidArgument(path + ": extends: " + own.extends +
                                     ", which the chain of bases has read already");
    }
    if (static_cast<int>(chain->size()) >= kMaxExpectationsChain) {
      return Status::InvalidArgument(path + ": extends: " + own.extends +
                                     ": a chain of more than " +
                                     std::to_string(kMaxExpectationsChain) + " files");
    }
    const std::string base_path =
        (std::filesystem::path(path).parent_path() / own.extends).string();
    Expectations base;
    const Status s = ReadChain(base_path, chain, &base);
    if (!s.ok()) return Status::InvalidArgument(path + ": extends: " + s.message());
    CKPTSPEC_RETURN_IF_ERROR(ApplyBase(base, &own));
  }
  *out = std::move(own);
  return Status::OK();
}

}  // namespace

Status ReadExpectationsFile(const std::string& path, Expectations* out) {
  std::vector<std::string> chain;
  return ReadChain(path, &chain, out);
}

}  // namespace ckptspec
