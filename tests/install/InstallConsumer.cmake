# ctest install_consumer / install_tools (tests/install/CMakeLists.txt), run with cmake -P:
#   1. `cmake --install BUILD_DIR --prefix WORK_DIR/prefix` into an emptied directory;
#   2. the expected files are there, the installed headers include nothing but each other and the
#      standard library, and the installed tools start (their shared libraries resolve outside the
#      build tree);
#   3. (CONSUMER=ON) configures tests/install/consumer against the prefix with the project's
#      compiler (and ccache), builds it, and runs it: it must print "consumer: ok".
# Any failing step fails the test with the step's output.
# Variables: BUILD_DIR WORK_DIR CONSUMER CONSUMER_SOURCE GENERATOR CXX_COMPILER LAUNCHER LIBDIR,
# TOOLS (comma-separated).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" TOOLS "${TOOLS}")
if(NOT TOOLS)
  message(FATAL_ERROR "install test: no tool to check (TOOLS is empty)")
endif()

function(step name)
  message(STATUS "install test: ${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${name} failed (${rc}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# ---- 1. install ----
step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# ---- 2. what was installed ----
set(expected)
foreach(tool IN LISTS TOOLS)
  list(APPEND expected bin/${tool})
endforeach()
if(CONSUMER)
  list(APPEND expected
    include/scanforge/compiler/api/Scanforge.h
    ${LIBDIR}/cmake/scanforge/scanforgeConfig.cmake
    ${LIBDIR}/cmake/scanforge/scanforgeConfigVersion.cmake
    ${LIBDIR}/cmake/scanforge/scanforgeTargets.cmake
    ${LIBDIR}/libscanforge.so
    share/scanforge/models/mingru.scan)
endif()
foreach(file IN LISTS expected)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install test: ${prefix}/${file} was not installed")
  endif()
endforeach()

# Installed headers: every quoted include names another installed header (no MLIR, LLVM, Halide or
# other project header), every angle-bracket include a standard header (no '/' and no '.h').
file(GLOB_RECURSE headers ${prefix}/include/*)
foreach(header IN LISTS headers)
  file(STRINGS ${header} includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS includes)
    if(line MATCHES "\"([^\"]+)\"")
      if(NOT EXISTS ${prefix}/include/scanforge/${CMAKE_MATCH_1})
        message(FATAL_ERROR "install test: ${header} includes \"${CMAKE_MATCH_1}\", which is not installed")
      endif()
    elseif(line MATCHES "<([^>]+)>")
      if(CMAKE_MATCH_1 MATCHES "[/.]")
        message(FATAL_ERROR "install test: ${header} includes <${CMAKE_MATCH_1}>, not a standard C++ header")
      endif()
    endif()
  endforeach()
endforeach()

# The installed tools start (their RUNPATH finds libMLIR & co. without the build tree).
foreach(tool IN LISTS TOOLS)
  step("run installed ${tool} --help" ${prefix}/bin/${tool} --help)
endforeach()
if(CONSUMER AND "scanc" IN_LIST TOOLS)
  step("installed scanc checks the installed models" ${prefix}/bin/scanc check ${prefix}/share/scanforge/models/mingru.scan)
endif()
if(NOT CONSUMER)
  file(REMOVE_RECURSE ${WORK_DIR})  # kept only when a step fails
  message(STATUS "install test: ok (tools only)")
  return()
endif()

# ---- 3. a consumer project ----
set(consumer_build ${WORK_DIR}/consumer-build)
set(configure ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${consumer_build} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
step("configure the consumer" ${configure})
file(STRINGS ${consumer_build}/CMakeCache.txt found REGEX "^scanforge_DIR:")
if(NOT found STREQUAL "scanforge_DIR:PATH=${prefix}/${LIBDIR}/cmake/scanforge")
  message(FATAL_ERROR "install test: the consumer found another scanforge: ${found}")
endif()
step("build the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
step("run the consumer" ${consumer_build}/consumer)
message("${step_output}")
if(NOT step_output MATCHES "consumer: ok")
  message(FATAL_ERROR "install test: the consumer did not print 'consumer: ok'")
endif()
file(REMOVE_RECURSE ${WORK_DIR})  # kept only when a step fails
message(STATUS "install test: ok")
