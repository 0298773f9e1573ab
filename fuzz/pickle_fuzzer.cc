// Fuzzes the safe pickle reader (formats/pickle_reader.h) and the DCP .metadata reader built on it
// (formats/dcp_metadata.h, formats/dcp_checks.h): any bytes give a Status, never a crash, a hang
// or an allocation beyond a small multiple of the input; nothing is executed. Whatever reads as a
// document is walked through every accessor (bounded: a pickle may hold cycles), and whatever
// reads as DCP metadata is checked as `ckptspec verify` does, against files that all exist.
// Seeds: real .metadata files written by PyTorch DCP and megatron-core, and torch.save data.pkl
// files (corpus/pickle_fuzzer_seed_corpus).
#include <string>
#include <vector>

#include "formats/dcp_checks.h"
#include "formats/dcp_metadata.h"
#include "formats/pickle_reader.h"
#include "fuzz/fuzz_target.h"

namespace {

using ckptspec::PickleDocument;
using ckptspec::PyValue;

// Visits at most `budget` values reachable from `v`, reading each through its accessors.
void Walk(const PickleDocument& doc, PyValue v, int depth, size_t* budget) {
  if (*budget == 0 || depth > 64) return;
  --*budget;
  (void)doc.Int(v);
  (void)doc.Float(v);
  (void)doc.Str(v);
  (void)doc.Len(v);
  (void)doc.GlobalName(v);
  (void)doc.DictGet(v, "fqn");
  for (const PyValue& item : doc.Items(v)) Walk(doc, item, depth + 1, budget);
  if (v.is(PyValue::Kind::kObject)) {
    const ckptspec::PickleClass* c = doc.ClassOf(v);
    CKPTSPEC_FUZZ_CHECK(c != nullptr, "an object without a class");
    for (size_t i = 0; i < c->field_count; ++i) Walk(doc, doc.FieldAt(v, i), depth + 1, budget);
    Walk(doc, doc.Extras(v), depth + 1, budget);
  }
  if (v.is(PyValue::Kind::kPersistentId)) Walk(doc, doc.PersistentIdTuple(v), depth + 1, budget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (bool permissive : {false, true}) {
    PickleOptions options;
    options.permissive = permissive;
    PickleDocument doc;
    if (!ReadPickle(bytes, options, &doc).ok()) continue;
    size_t budget = 4 * size + 64;
    Walk(doc, doc.root(), 0, &budget);
  }
  DcpMetadata md;
  if (!md.Read(bytes).ok()) return 0;
  DcpIndexReport report;
  CheckDcpIndex(
      md,
      [](std::string_view, uint64_t* file_size) {
        *file_size = uint64_t{1} << 20;
        return true;
      },
      &report);
  CKPTSPEC_FUZZ_CHECK(report.tensors == static_cast<int64_t>(md.tensors().size()),
                      "the report counts other tensors than the index holds");
  return 0;
}
