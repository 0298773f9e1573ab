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
