# Compile and link settings chosen for build speed (docs/PERFORMANCE.md, "The build", has the
# measurements behind them).
#
# Debug information: RelWithDebInfo builds keep line tables only (-g1) instead of full debug
# information (-g). Line tables are what backtraces, perf, sanitizer reports and libFuzzer's crash
# reports read; full information (local variables, types) made each compile about 30 % slower.
# Configure with -DCKPTSPEC_FULL_DEBUG_INFO=ON (or use the Debug build type) to step through code
# in a debugger.
option(CKPTSPEC_FULL_DEBUG_INFO "Full debug information (-g) in RelWithDebInfo builds" OFF)
if(NOT CKPTSPEC_FULL_DEBUG_INFO)
  # Comes after CMAKE_CXX_FLAGS_RELWITHDEBINFO's -g on the command line, so it wins.
  add_compile_options($<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:RelWithDebInfo>>:-g1>)
endif()

# Test files: a test file's own code (assertions, fixtures, calls into the libraries) is compiled
# with -Og: the code under test lives in the libraries, which keep the build type's optimization,
# and -O2 made the test files' compiles about 1.3 times as long. CKPTSPEC_OPTIMIZE_TESTS=ON keeps
# the build type's optimization for them too.
option(CKPTSPEC_OPTIMIZE_TESTS "Compile test files with the build type's optimization, not -Og" OFF)
set(CKPTSPEC_TEST_COMPILE_OPTIONS "")
if(NOT CKPTSPEC_OPTIMIZE_TESTS)
  # After the build type's -O flag on the command line, so it wins; C++ sources only (the CUDA
  # tests' kernels keep nvcc's settings). ckptspec_add_tests (cmake/Testing.cmake) applies it.
  set(CKPTSPEC_TEST_COMPILE_OPTIONS $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>:-Og>)
endif()

# Linker: lld where the compiler accepts -fuse-ld=lld (Debian's lld package, installed by
# ci/setup); otherwise the compiler's default linker.
option(CKPTSPEC_USE_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)
if(CKPTSPEC_USE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" CKPTSPEC_HAVE_LLD)
  if(CKPTSPEC_HAVE_LLD)
    add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=lld>)
  endif()
endif()

# Unity build: the sources of each library and executable are compiled in batches of
# CMAKE_UNITY_BUILD_BATCH_SIZE files per compiler run, so the heavy headers (nlohmann/json, the
# standard library) are parsed once per batch instead of once per file. The files of a batch share
# one translation unit: names in anonymous namespaces must be unique within a target. Touching one
# file recompiles its batch; configure with -DCKPTSPEC_UNITY_BUILD=OFF to compile file by file.
option(CKPTSPEC_UNITY_BUILD "Compile each target's sources in batches (a unity build)" ON)
if(CKPTSPEC_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()
