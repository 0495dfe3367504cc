# scanforge_require(<Package> DEBIAN <debian-package> [find_package arguments...])
# Finds a CMake package or stops configuration with the Debian package that provides it.
# A macro, so that the package's variables land in the caller's scope.
macro(scanforge_require name)
  cmake_parse_arguments(SFREQ "" "DEBIAN" "" ${ARGN})
  find_package(${name} ${SFREQ_UNPARSED_ARGUMENTS} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR
      "scanforge needs ${name}, which comes from the Debian package '${SFREQ_DEBIAN}'.\n"
      "Install every dependency with: tools/install-deps.sh")
  endif()
endmacro()

# scanforge_require_program(<VAR> <program> DEBIAN <debian-package> [PATHS ...])
function(scanforge_require_program var program)
  cmake_parse_arguments(ARG "" "DEBIAN" "PATHS" ${ARGN})
  find_program(${var} ${program} PATHS ${ARG_PATHS})
  if(NOT ${var})
    message(FATAL_ERROR
      "scanforge needs the program '${program}', which comes from the Debian package '${ARG_DEBIAN}'.\n"
      "Install every dependency with: tools/install-deps.sh")
  endif()
endfunction()
