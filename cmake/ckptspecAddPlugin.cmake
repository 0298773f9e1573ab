# ckptspec_add_plugin(<name> SOURCES <source>...)
#
# Builds a plugin (runner/plugin.h, docs/PLUGINS.md): a shared module lib<name>.so that
# `ckptspec run --plugin` loads. It compiles against ckptspec's public headers (C++17, no
# extensions, position-independent) and links none of ckptspec's libraries: their symbols resolve
# against the ckptspec executable when the plugin is loaded. Its compatibility stamp comes from
# the headers (CKPTSPEC_PLUGIN); build it with the compiler ckptspec was built with. __FILE__ (in
# a failure's message) is relative to the directory that calls this function.
#
# Uses CKPTSPEC_PLUGIN_INTERFACE (the target carrying the include path and nlohmann_json), and
# CKPTSPEC_PLUGIN_COMPILE_OPTIONS / CKPTSPEC_PLUGIN_LINK_OPTIONS (the sanitizer flags of a
# sanitized ckptspec), set by the package (ckptspecConfig.cmake) or by the source tree.
function(ckptspec_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "ckptspec_add_plugin(${name}): no SOURCES")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${CKPTSPEC_PLUGIN_INTERFACE})
  target_compile_options(${name} PRIVATE ${CKPTSPEC_PLUGIN_COMPILE_OPTIONS}
                         -fmacro-prefix-map=${CMAKE_CURRENT_SOURCE_DIR}/=)
  target_link_options(${name} PRIVATE ${CKPTSPEC_PLUGIN_LINK_OPTIONS})
  set_target_properties(${name} PROPERTIES PREFIX "lib" CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                        CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
endfunction()
