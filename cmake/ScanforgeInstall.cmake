# Installation (`cmake --install build --prefix DIR`, see README.md "Install"):
#   bin/                           the tools built in this configuration
#   lib/libscanforge.so            the compiler's C++ API (with the compiler itself linked in)
#   include/scanforge/compiler/api the API's headers (pure C++: no MLIR or Halide header)
#   lib/cmake/scanforge/           the CMake package: find_package(scanforge) -> scanforge::scanforge
#   share/scanforge/models/        the recurrences of models/*.scan
# Included at the end of the top-level CMakeLists.txt, when every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The tools find their shared libraries where they were linked (libMLIR.so.19.1 lives in
# /usr/lib/llvm-19/lib, outside the loader's default path), installed or not.
foreach(tool IN ITEMS scanc scan-opt scan-train scan-sample scan-bench scan-package-run scan-gpu-bench)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

if(NOT SCANFORGE_WITH_COMPILER)
  return()  # runtime-only: the tools above, no library (the API needs the compiler)
endif()

# ---- libscanforge.so: the API as one shared library ----
# MLIR (LLVM 19) and Halide (whose CMake package finds LLVM 14) cannot be found in one CMake scope
# (docs/architecture.md, "Two LLVMs in one process"), so the installed package must not ask a
# consumer to find either. The library is built from the API's own objects (scanforge_compiler's)
# and links the project's static libraries under them PRIVATEly; a version script
# (cmake/scanforge.exports) keeps the project's internal namespaces local. libMLIR, libLLVM 19 and
# libHalide (with LLVM 14) stay Debian shared libraries that it records as NEEDED, with their
# directories as its RUNPATH; none of their code is linked in, only the inline functions and
# statics their headers instantiate, which must stay global (see the version script).
add_library(scanforge SHARED $<TARGET_OBJECTS:scanforge_compiler>)
add_library(scanforge::scanforge ALIAS scanforge)
target_link_libraries(scanforge PRIVATE scanforge_compiler)
set(scanforge_exports ${PROJECT_SOURCE_DIR}/cmake/scanforge.exports)
target_link_options(scanforge PRIVATE -Wl,--version-script,${scanforge_exports} -Wl,--no-undefined)
set_property(TARGET scanforge APPEND PROPERTY LINK_DEPENDS ${scanforge_exports})
set_target_properties(scanforge PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  EXPORT_NAME scanforge
  INSTALL_RPATH_USE_LINK_PATH TRUE)
# Consumers include the headers by their repository path, "compiler/api/Scanforge.h", in the tree
# and installed alike: the include root holds compiler/api/ only (in the build tree, a directory
# with a link to it).
set(scanforge_include_subdir ${CMAKE_INSTALL_INCLUDEDIR}/scanforge)
set(api_view ${PROJECT_BINARY_DIR}/include-views/api)
file(MAKE_DIRECTORY ${api_view}/compiler)
if(NOT IS_SYMLINK ${api_view}/compiler/api)
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/compiler/api ${api_view}/compiler/api SYMBOLIC)
endif()
target_include_directories(scanforge INTERFACE
  $<BUILD_INTERFACE:${api_view}>
  $<INSTALL_INTERFACE:${scanforge_include_subdir}>)
# The headers are written in the project's C++ (CMAKE_CXX_STANDARD 20).
target_compile_features(scanforge INTERFACE cxx_std_20)
# A sanitized build (SCANFORGE_SANITIZERS, the ci preset) makes a library that needs the sanitizer
# runtimes loaded first: the consumer's executable must be linked with the same -fsanitize, which
# the imported target carries in its INTERFACE_LINK_OPTIONS.
if(SCANFORGE_SANITIZERS)
  list(JOIN SCANFORGE_SANITIZERS "," san)
  target_link_options(scanforge PUBLIC -fsanitize=${san})
endif()

install(TARGETS scanforge EXPORT scanforgeTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The headers of compiler/api/ are public (pure C++, no MLIR or Halide include), except
# CompiledModuleImpl.h, the in-repository view of a CompiledModule's IR for tools and tests, and
# RecurrenceImpl.h, what a Recurrence holds inside the library.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/compiler/api/
  DESTINATION ${scanforge_include_subdir}/compiler/api
  FILES_MATCHING PATTERN "*.h" PATTERN "CompiledModuleImpl.h" EXCLUDE PATTERN "RecurrenceImpl.h" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/scanforge/models
  FILES_MATCHING PATTERN "*.scan")

set(SCANFORGE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/scanforge)
set(SCANFORGE_INSTALL_MODELSDIR ${CMAKE_INSTALL_DATADIR}/scanforge/models)
install(EXPORT scanforgeTargets NAMESPACE scanforge:: DESTINATION ${SCANFORGE_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/scanforgeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/scanforgeConfig.cmake
  INSTALL_DESTINATION ${SCANFORGE_INSTALL_CMAKEDIR}
  PATH_VARS SCANFORGE_INSTALL_MODELSDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/scanforgeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/scanforgeConfig.cmake ${PROJECT_BINARY_DIR}/cmake/scanforgeConfigVersion.cmake
  DESTINATION ${SCANFORGE_INSTALL_CMAKEDIR})
