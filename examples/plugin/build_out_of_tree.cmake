# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... [-DLAUNCHER=...]
#       [-DBUILD_TYPE=...] -P build_out_of_tree.cmake
# What a user outside the tree does: installs ckptspec's build into a prefix, configures the
# example plugin as a project of its own against the installed package (find_package(ckptspec),
# ckptspec_add_plugin), builds it, and runs it with the installed ckptspec
# (expect_examples.cmake's checks).
file(REMOVE_RECURSE ${WORK_DIR})
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (${code}):\n${out}${err}")
  endif()
endfunction()
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# The compiler comes from the package (its ckptspecCompiler.cmake), not from this tree's build.
file(GLOB_RECURSE compiler_cache ${WORK_DIR}/prefix/*/ckptspecCompiler.cmake)
if(NOT compiler_cache)
  message(FATAL_ERROR "the installed package has no ckptspecCompiler.cmake")
endif()
set(configure ${CMAKE_COMMAND} -C ${compiler_cache} -S ${SOURCE_DIR} -B ${WORK_DIR}/build
    -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
if(LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
if(BUILD_TYPE)
  list(APPEND configure -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
run_step("configuring the plugin against the installed package" ${configure})
run_step("building the plugin" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
set(CKPTSPEC ${WORK_DIR}/prefix/bin/ckptspec)
set(PLUGIN ${WORK_DIR}/build/libckptspec_example_plugin.so)
include(${CMAKE_CURRENT_LIST_DIR}/expect_examples.cmake)
