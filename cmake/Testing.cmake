# ckptspec_add_tests(LIBRARY lib SOURCES a_test.cc b_test.cc ... [LABELS label...])
#
# Builds one test binary per *_test.cc file, linked against LIBRARY, GoogleTest and RapidCheck, and
# registers it with ctest under the file's name, with the given ctest labels (ci/nightly selects
# the "property" tests by label). Every test times out after CKPTSPEC_TEST_TIMEOUT seconds.
# Test files get CKPTSPEC_TEST_COMPILE_OPTIONS (cmake/BuildSpeed.cmake).
set(CKPTSPEC_TEST_TIMEOUT 600 CACHE STRING "ctest timeout of each test, in seconds")
include(GoogleTest)
function(ckptspec_add_tests)
  cmake_parse_arguments(ARG "" "LIBRARY" "SOURCES;LABELS" ${ARGN})
  set(properties TIMEOUT ${CKPTSPEC_TEST_TIMEOUT})
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  foreach(source IN LISTS ARG_SOURCES)
    get_filename_component(name "${source}" NAME_WE)
    add_executable(${name} "${source}")
    target_link_libraries(${name} PRIVATE ${ARG_LIBRARY} GTest::gtest_main rapidcheck rapidcheck_gtest)
    target_compile_options(${name} PRIVATE ${CKPTSPEC_TEST_COMPILE_OPTIONS})
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
  endforeach()
endfunction()
