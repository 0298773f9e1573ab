// Every fuzz target defines LLVMFuzzerTestOneInput. Built with clang as a libFuzzer binary, and
// with any compiler as a replayer (replay_main.cc) that ctest runs over the target's seed corpus
// and its kept regressions. A target aborts (CKPTSPEC_FUZZ_CHECK) when an invariant breaks;
// anything else it must survive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// Aborts with a message naming the broken invariant (a finding, to keep under corpus/regressions).
#define CKPTSPEC_FUZZ_CHECK(cond, what)                                    \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "ckptspec fuzz invariant broken: %s (%s:%d)\n", \
                   static_cast<const char*>(what), __FILE__, __LINE__);    \
      std::abort();                                                        \
    }                                                                      \
  } while (0)
