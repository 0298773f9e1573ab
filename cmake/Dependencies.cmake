# Finds every dependency through its Debian-installed CMake package (installed by ci/setup).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(GTest REQUIRED)
find_package(rapidcheck REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(CKPTSPEC_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA is optional: the device checks build only where a CUDA compiler exists. Nothing needs a GPU
# to compile them; tests that need one skip visibly at run time.
set(CKPTSPEC_HAVE_CUDA OFF)
if(CKPTSPEC_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CKPTSPEC_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "ckptspec: CUDA device checks ${CKPTSPEC_HAVE_CUDA}")

# libFuzzer targets need clang's -fsanitize=fuzzer.
set(CKPTSPEC_HAVE_LIBFUZZER OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(CKPTSPEC_HAVE_LIBFUZZER ON)
endif()
message(STATUS "ckptspec: libFuzzer targets ${CKPTSPEC_HAVE_LIBFUZZER}")

# The allocator of the executables that run property cases (the ckptspec command, the built-in
# adapter, the benchmarks): mimalloc, from its Debian package, where it is installed and the build
# is not sanitized (the sanitizers bring their own). A property case builds and drops tens of
# thousands of small strings, vectors and JSON nodes; with glibc's malloc about a third of a case
# went to the allocator (docs/PERFORMANCE.md). Libraries and test executables keep the system
# allocator: tests that cap a process's address space (RLIMIT_AS) measure the code, not an
# allocator's reservations. CKPTSPEC_MIMALLOC=OFF links nothing.
option(CKPTSPEC_MIMALLOC "Link mimalloc into the executables that run property cases" ON)
add_library(ckptspec_allocator INTERFACE)
set(CKPTSPEC_ALLOCATOR "the system's malloc")
if(CKPTSPEC_MIMALLOC AND NOT CKPTSPEC_SANITIZE)
  find_package(mimalloc 2.0 QUIET)
  if(mimalloc_FOUND)
    # The shared library: linked before libc, its malloc and free take the place of glibc's for the
    # whole process (plugins included).
    target_link_libraries(ckptspec_allocator INTERFACE mimalloc)
    set(CKPTSPEC_ALLOCATOR "mimalloc ${mimalloc_VERSION}")
  endif()
endif()
message(STATUS "ckptspec: allocator of the ckptspec command and benchmarks: ${CKPTSPEC_ALLOCATOR}")
