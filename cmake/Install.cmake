# `cmake --install`: the ckptspec executable (and the storage recorder's interposer beside it), the
# public headers (cmake/PublicHeaders.cmake) under include/ckptspec/ with the generated stamp
# header, and the CMake package that
# find_package(ckptspec) reads (cmake/ckptspecConfig.cmake.in, with ckptspec_add_plugin). The
# package's version must match exactly: a plugin is built against one ckptspec.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CKPTSPEC_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/ckptspec)
set(CKPTSPEC_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
set(CKPTSPEC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ckptspec)

foreach(header ${CKPTSPEC_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CKPTSPEC_INSTALL_INCLUDEDIR}/${dir})
endforeach()
install(FILES ${CKPTSPEC_BUILD_STAMP_HEADER}
        DESTINATION ${CKPTSPEC_INSTALL_INCLUDEDIR}/runner)
install(TARGETS ckptspec RUNTIME DESTINATION ${CKPTSPEC_INSTALL_BINDIR})
# The storage recorder's interposer goes beside the executable, where FsInterposerPath looks for
# it once the build tree is gone (crash/fs_recorder.h).
install(TARGETS ckptspec_fs_interposer LIBRARY DESTINATION ${CKPTSPEC_INSTALL_BINDIR})

# A sanitized ckptspec loads only sanitized plugins: the package passes the flags on.
set(CKPTSPEC_SANITIZE_FLAGS)
if(CKPTSPEC_SANITIZE)
  set(CKPTSPEC_SANITIZE_FLAGS "-fsanitize=address,undefined;-fno-omit-frame-pointer")
endif()
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/ckptspecConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ckptspecConfig.cmake
  INSTALL_DESTINATION ${CKPTSPEC_INSTALL_CMAKEDIR}
  PATH_VARS CKPTSPEC_INSTALL_INCLUDEDIR CKPTSPEC_INSTALL_BINDIR)
# The compiler ckptspec was built with, as an initial cache a plugin's first configure reads
# (`cmake -C .../ckptspecCompiler.cmake`): a plugin must be built with the same one (its stamp).
file(WRITE ${PROJECT_BINARY_DIR}/ckptspecCompiler.cmake
     "# The compiler ckptspec was built with: cmake -C this-file ... (docs/PLUGINS.md).\n"
     "set(CMAKE_CXX_COMPILER \"${CMAKE_CXX_COMPILER}\" CACHE FILEPATH \"ckptspec's compiler\")\n")
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ckptspecConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ExactVersion)
install(FILES ${PROJECT_BINARY_DIR}/ckptspecConfig.cmake
              ${PROJECT_BINARY_DIR}/ckptspecConfigVersion.cmake
              ${PROJECT_BINARY_DIR}/ckptspecCompiler.cmake
              ${PROJECT_SOURCE_DIR}/cmake/ckptspecAddPlugin.cmake
        DESTINATION ${CKPTSPEC_INSTALL_CMAKEDIR})
