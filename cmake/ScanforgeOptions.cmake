# Warning and sanitizer flags applied to every target the project defines (never to dependencies).
function(scanforge_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(SCANFORGE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  if(SCANFORGE_SANITIZERS)
    list(JOIN SCANFORGE_SANITIZERS "," san)
    # vptr checks need RTTI, which LLVM/MLIR are built without: they would flag every MLIR object.
    target_compile_options(${target} PRIVATE -fsanitize=${san} -fno-sanitize=vptr -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PUBLIC -fsanitize=${san})
  endif()
endfunction()
