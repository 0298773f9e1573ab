#include "base/resource_limits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source tree (set by targets/CMakeLists.txt)"
#endif

namespace ckptspec {
namespace {

// The rows of the limits table in docs/SECURITY.md, as written.
std::vector<std::string> DocumentedRows() {
  std::ifstream in(std::string(CKPTSPEC_SOURCE_DIR) + "/docs/SECURITY.md");
  std::vector<std::string> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("| limit | flag | default | accepted | meaning |", 0) == 0) {
      in_table = true;
      std::getline(in, line);  // the separator
      continue;
    }
    if (in_table && line.rfind("|", 0) != 0) break;
    if (in_table) rows.push_back(line);
  }
  return rows;
}

std::string CodeRow(const ResourceLimitInfo& info) {
  std::ostringstream row;
  row << "| `" << info.name << "` | `" << info.flag << "` | " << ResourceLimits().*info.field
      << " | " << info.min << " to " << info.max << " | " << info.meaning << " |";
  return row.str();
}

TEST(ResourceLimits, DocsTableIsTheCodeTable) {
  std::vector<std::string> expected;
  for (const ResourceLimitInfo& info : kResourceLimitTable) expected.push_back(CodeRow(info));
  std::string table;
  for (const std::string& row : expected) table += row + "\n";
  EXPECT_EQ(DocumentedRows(), expected) << "docs/SECURITY.md's limits table should read:\n"
                                        << table;
}

TEST(ResourceLimits, EveryFieldHasOneRowAndItsDefaultIsAccepted) {
  std::vector<uint64_t ResourceLimits::*> fields;
  std::set<std::string> names, flags;
  const ResourceLimits defaults;
  for (const ResourceLimitInfo& info : kResourceLimitTable) {
    EXPECT_EQ(std::find(fields.begin(), fields.end(), info.field), fields.end()) << info.name;
    fields.push_back(info.field);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_TRUE(flags.insert(info.flag).second) << info.flag;
    EXPECT_EQ(&LimitInfo(info.field), &info);
    EXPECT_LE(info.min, defaults.*info.field) << info.name;
    EXPECT_LE(defaults.*info.field, info.max) << info.name;
  }
  // sizeof counts the fields: one uint64_t each, every one in the table.
  EXPECT_EQ(sizeof(ResourceLimits), kResourceLimitCount * sizeof(uint64_t));
}

TEST(ResourceLimits, ExceedingALimitNamesItAndItsFlag) {
  ResourceLimits limits;
  limits.max_chunks = 7;
  const Status s = LimitExceeded("x/metadata.json", 9, "chunks and objects",
                                 &ResourceLimits::max_chunks, limits);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported);
  EXPECT_EQ(s.message(),
            "x/metadata.json: 9 chunks and objects exceed max_chunks = 7 (--max-chunks raises it)");
}

TEST(ResourceLimits, JsonLimitsFollowThePolicy) {
  ResourceLimits limits;
  limits.max_json_depth = 3;
  limits.max_metadata_bytes = 100;
  EXPECT_EQ(limits.json().max_depth, 3);
  EXPECT_EQ(limits.json().max_bytes, 100u);
  EXPECT_EQ(ResourceLimits().json().max_depth, kDefaultMaxJsonDepth);
}

}  // namespace
}  // namespace ckptspec
