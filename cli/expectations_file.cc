#include "cli/expectations_file.h"

#include <filesystem>
#include <utility>

#include "cli/input_file.h"

namespace ckptspec {

Status ReadExpectationsFile(const std::string& path, Expectations* out) {
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(
      ReadRegularFile("--expectations", path, kMaxExpectationsFileBytes, &text));
  Expectations own;
  CKPTSPEC_RETURN_IF_ERROR(ParseExpectations(text, path, &own));
  if (!own.extends.empty()) {
    const std::string base_path =
        (std::filesystem::path(path).parent_path() / own.extends).string();
    Expectations base;
    Status s = ReadRegularFile("--expectations", base_path, kMaxExpectationsFileBytes, &text);
    if (s.ok()) s = ParseExpectations(text, base_path, &base);
    if (!s.ok()) return Status::InvalidArgument(path + ": extends: " + s.message());
    CKPTSPEC_RETURN_IF_ERROR(ApplyBase(base, &own));
  }
  *out = std::move(own);
  return Status::OK();
}

}  // namespace ckptspec
