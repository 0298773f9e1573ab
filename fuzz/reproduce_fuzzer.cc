// Fuzzes the reproduce-string decoder (runner/reproduce_string.h), the code that reads what a
// user pastes into `ckptspec replay`: any bytes give a Status, never a crash. A string that
// decodes round-trips (RapidCheck's writer, given the decoded case, writes a string that decodes
// to the same case), and RapidCheck replays it on the project's generators without asserting or
// reading out of bounds: the property fails on every case, so the replay walks the shrink path
// through the layout generators' shrinks.
#include <iostream>
#include <sstream>
#include <string>

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include "fuzz/fuzz_target.h"
#include "generators/layout_gen.h"
#include "runner/reproduce_string.h"

namespace {

class SilentListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// RapidCheck prints its global configuration the first time anything asks for it.
void QuietRapidCheck() {
  static const bool done = [] {
    std::streambuf* saved = std::cerr.rdbuf(nullptr);
    rc::detail::configuration();
    std::cerr.rdbuf(saved);
    return true;
  }();
  (void)done;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  DecodedReproduce decoded;
  if (!DecodeReproduceString(std::string(reinterpret_cast<const char*>(data), size), &decoded).ok())
    return 0;

  rc::detail::Configuration config;
  config.testParams = decoded.params;
  config.reproduce[decoded.id()] = decoded.reproduce;
  std::ostringstream written;
  written << config;
  DecodedReproduce again;
  CKPTSPEC_FUZZ_CHECK(DecodeReproduceString(written.str(), &again).ok(),
                      "what RapidCheck writes for a decoded case does not decode");
  CKPTSPEC_FUZZ_CHECK(again.id() == decoded.id() && again.params == decoded.params &&
                          again.reproduce == decoded.reproduce,
                      "a decoded case does not round-trip");

  QuietRapidCheck();
  rc::detail::TestMetadata metadata;
  metadata.id = decoded.id();
  SilentListener listener;
  const auto property = rc::detail::toProperty([] {
    const LayoutAndModel lm = *gen::LayoutAndModelUpTo(16);
    const InvalidLayoutCase invalid = *gen::InvalidLayout();
    RC_ASSERT(ValidateModelForLayout(lm.model, lm.layout).ok());
    RC_FAIL("every case fails: " + lm.layout.ToString() + "; " + invalid.expected_error);
  });
  rc::detail::checkProperty(property, metadata, decoded.params, listener, config.reproduce);
  return 0;
}
