// The save and load request lines written directly as text, without building their JSON trees:
// a case's requests hold far more JSON than data, and building and dumping the trees cost the
// harness more than writing the text. The text is exactly DumpLine's of the tree SaveCallToJson /
// LoadCallToJson build, with "id" and "op" added (request_writer_test.cc compares them for
// random calls), so an adapter cannot tell the two apart.
#pragma once

#include <cstdint>
#include <string>

#include "targets/process/protocol.h"

namespace ckptspec {

// {"id": id, "op": "save", ...SaveCallToJson(call)}, as DumpLine spells it (no newline).
std::string SaveRequestLine(const SaveCall& call, int64_t id);
// {"id": id, "op": "load", ...LoadCallToJson(call)}, as DumpLine spells it (no newline).
std::string LoadRequestLine(const LoadCall& call, int64_t id);

}  // namespace ckptspec
