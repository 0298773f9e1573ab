// make_golden: (re)writes corpus/golden/<scenario>/ from the current reference. Run it by hand,
// deliberately, when a new format version adds goldens — never from CI — and commit the result:
//   cmake --build build --target make_golden && build/properties/make_golden [scenario...]
// With no argument it writes every scenario whose directory does not exist yet (existing goldens
// are history and are not rewritten unless named explicitly).
#include <iostream>
#include <set>

#include "properties/golden.h"
#include "targets/reference/reference_factory.h"

int main(int argc, char** argv) {
  using namespace ckptspec;
  const std::set<std::string> named(argv + 1, argv + argc);
  Env* env = Env::Posix();
  int failures = 0;
  for (const GoldenScenario& scenario : GoldenScenarios()) {
    const std::string dir = JoinPath(GoldenCorpusDir(), scenario.name);
    if (named.empty() ? env->FileExists(dir).ok() : !named.count(scenario.name)) continue;
    const Status s =
        WriteGoldenScenario(scenario, ReferenceTargetFactory(scenario.index_layout), env, dir);
    std::cout << scenario.name << ": " << (s.ok() ? "written to " + dir : s.ToString()) << "\n";
    failures += !s.ok();
  }
  return failures == 0 ? 0 : 1;
}
