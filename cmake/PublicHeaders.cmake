# The public headers: what a plugin compiles against (docs/PLUGINS.md), relative to the source
# root. They are the headers CKPTSPEC_PLUGIN_HEADERS names and every header of the tree they
# include, directly or not; nothing else of the tree is installed. They are installed under
# include/ckptspec/ with their directories, and their text is hashed into the compatibility
# stamp (runner/plugin_stamp.h), so a change of any other header leaves plugins compatible.
#
# The stamp header runner/build_stamp.h is generated into ${CKPTSPEC_GENERATED_DIR} whenever a
# public header changes (cmake/WriteBuildStamp.cmake); the target ckptspec_build_stamp makes it.
# ckptspec_plugin_interface is what a plugin built in the tree compiles against: the source root
# and the generated directory on the include path, and nlohmann_json.

# The plugin-facing headers: the plugin definition, the ways to make a target (a mutant's parts,
# an engine of one's own, the reference's factory), the interfaces those parts implement, and the
# helpers docs/PLUGINS.md documents.
set(CKPTSPEC_PLUGIN_HEADERS
    runner/plugin.h
    targets/mutants/mutant_target.h
    targets/mutants/saved_param_groups.h
    targets/reference/reference_factory.h
    targets/reference/reference_engine.h
    targets/reference/reference_target.h
    targets/target.h
    targets/target_factory.h)

# The closure of `headers` under the tree's own #include "..." lines (resolved against the source
# root; system and third-party headers, and generated ones, are not followed), sorted, into `out`.
function(ckptspec_header_closure out)
  set(queue ${ARGN})
  set(seen)
  while(queue)
    list(POP_FRONT queue header)
    if(header IN_LIST seen OR NOT EXISTS ${PROJECT_SOURCE_DIR}/${header})
      continue()
    endif()
    list(APPEND seen ${header})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${header} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*$" "\\1" included "${line}")
      list(APPEND queue ${included})
    endforeach()
  endwhile()
  list(SORT seen)
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

ckptspec_header_closure(CKPTSPEC_PUBLIC_HEADERS ${CKPTSPEC_PLUGIN_HEADERS})
# A change of any of them (an #include added) recomputes the closure.
foreach(header ${CKPTSPEC_PUBLIC_HEADERS})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${header})
endforeach()

set(CKPTSPEC_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
set(CKPTSPEC_BUILD_STAMP_HEADER ${CKPTSPEC_GENERATED_DIR}/runner/build_stamp.h)
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
  COMMENT "Hashing the public headers into runner/build_stamp.h" VERBATIM)
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
