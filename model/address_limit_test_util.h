// For tests that cap a process's address space (RLIMIT_AS) to show that what untrusted input
// makes ckptspec allocate stays bounded. Header-only: tests include it, the libraries do not.
//
// CKPTSPEC_NO_ADDRESS_LIMIT is defined in sanitized builds: the sanitizers reserve address space
// (shadow memory) beyond any useful limit, so such tests skip there, saying so.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CKPTSPEC_NO_ADDRESS_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define CKPTSPEC_NO_ADDRESS_LIMIT 1
#endif
#endif

namespace ckptspec {
namespace testing_util {

// The address space this process has mapped (VmSize), in bytes; 0 when unknown.
inline uint64_t MappedAddressSpace() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  }
  return 0;
}

// The reason such a test gives when it skips.
inline constexpr const char* kNoAddressLimitReason =
    "sanitizers reserve address space beyond any limit";

}  // namespace testing_util
}  // namespace ckptspec
