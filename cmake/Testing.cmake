# ckptspec_add_tests(LIBRARY lib SOURCES a_test.cc b_test.cc ...)
#
# Builds one test binary per *_test.cc file, linked against LIBRARY, GoogleTest and RapidCheck, and
# registers it with ctest under the file's name.
include(GoogleTest)
function(ckptspec_add_tests)
  cmake_parse_arguments(ARG "" "LIBRARY" "SOURCES" ${ARGN})
  foreach(source IN LISTS ARG_SOURCES)
    get_filename_component(name "${source}" NAME_WE)
    add_executable(${name} "${source}")
    target_link_libraries(${name} PRIVATE ${ARG_LIBRARY} GTest::gtest_main rapidcheck rapidcheck_gtest)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
  endforeach()
endfunction()
