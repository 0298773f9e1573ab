# The public headers: every header of the libraries the ckptspec executable links and a plugin
# compiles against (properties/plugin.h), relative to the source root; test-only headers are left
# out. They are installed under include/ckptspec/ with their directories, and their text is
# hashed into the compatibility stamp (properties/plugin_stamp.h).
#
# The stamp header properties/build_stamp.h is generated into ${CKPTSPEC_GENERATED_DIR} whenever a
# public header changes (cmake/WriteBuildStamp.cmake); the target ckptspec_build_stamp makes it.
# ckptspec_plugin_interface is what a plugin built in the tree compiles against: the source root
# and the generated directory on the include path, and nlohmann_json.
file(GLOB_RECURSE CKPTSPEC_PUBLIC_HEADERS RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/model/*.h ${PROJECT_SOURCE_DIR}/base/*.h ${PROJECT_SOURCE_DIR}/generators/*.h
     ${PROJECT_SOURCE_DIR}/targets/*.h ${PROJECT_SOURCE_DIR}/properties/*.h)
list(FILTER CKPTSPEC_PUBLIC_HEADERS EXCLUDE REGEX "_test_util\\.h$|_test\\.h$")
list(SORT CKPTSPEC_PUBLIC_HEADERS)

set(CKPTSPEC_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
set(CKPTSPEC_BUILD_STAMP_HEADER ${CKPTSPEC_GENERATED_DIR}/properties/build_stamp.h)
set(header_paths)
foreach(header ${CKPTSPEC_PUBLIC_HEADERS})
  list(APPEND header_paths ${PROJECT_SOURCE_DIR}/${header})
endforeach()
set(header_list ${PROJECT_BINARY_DIR}/public_headers.txt)
string(REPLACE ";" "\n" header_lines "${CKPTSPEC_PUBLIC_HEADERS}")
file(CONFIGURE OUTPUT ${header_list} CONTENT "${header_lines}\n")
add_custom_command(
  OUTPUT ${CKPTSPEC_BUILD_STAMP_HEADER}
  COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DHEADER_LIST=${header_list}
          -DVERSION=${PROJECT_VERSION} -DOUT=${CKPTSPEC_BUILD_STAMP_HEADER}
          -P ${PROJECT_SOURCE_DIR}/cmake/WriteBuildStamp.cmake
  DEPENDS ${header_paths} ${header_list} ${PROJECT_SOURCE_DIR}/cmake/WriteBuildStamp.cmake
  COMMENT "Hashing the public headers into properties/build_stamp.h" VERBATIM)
add_custom_target(ckptspec_build_stamp DEPENDS ${CKPTSPEC_BUILD_STAMP_HEADER})

add_library(ckptspec_plugin_interface INTERFACE)
target_include_directories(ckptspec_plugin_interface INTERFACE ${PROJECT_SOURCE_DIR}
                           ${CKPTSPEC_GENERATED_DIR})
target_link_libraries(ckptspec_plugin_interface INTERFACE nlohmann_json::nlohmann_json)
add_dependencies(ckptspec_plugin_interface ckptspec_build_stamp)
set(CKPTSPEC_PLUGIN_INTERFACE ckptspec_plugin_interface)
# In the tree the build's own flags (sanitizers included) apply to plugins already.
set(CKPTSPEC_PLUGIN_COMPILE_OPTIONS)
set(CKPTSPEC_PLUGIN_LINK_OPTIONS)
include(${PROJECT_SOURCE_DIR}/cmake/ckptspecAddPlugin.cmake)
