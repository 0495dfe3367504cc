# Warning and sanitizer flags applied to every target the project defines (never to dependencies).
function(scanforge_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(SCANFORGE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  scanforge_include_root(${target} include_root)
  target_include_directories(${target} PUBLIC ${include_root})
  if(SCANFORGE_SANITIZERS)
    list(JOIN SCANFORGE_SANITIZERS "," san)
    # vptr checks need RTTI, which LLVM/MLIR are built without: they would flag every MLIR object.
    target_compile_options(${target} PRIVATE -fsanitize=${san} -fno-sanitize=vptr -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PUBLIC -fsanitize=${san})
  endif()
endfunction()

# Layering (docs/architecture.md, "Layering"): the include root a target gets, by the folder it is
# defined in. Includes are written from the repository root ("runtime/core/Tensor.h"), so a folder
# can only be hidden by giving a target a root that holds just the folders it may include: a
# directory under the build tree with symbolic links to them. Libraries in
#   dsl/       see dsl/ only;
#   runtime/   see runtime/ only (no compiler/, dsl/ or models/: the runtime builds without MLIR);
#   compiler/  see compiler/, dsl/ and runtime/ (not models/). compiler/mlir adds the repository
#              root to its own directory's targets (include_directories there), so for those the
#              check is tests/layering/check_layering.py only;
# everything else (models/, tools/, tests/) sees the repository root. models/ may use compiler/
# only through compiler/api/, which the build cannot express while models/ links the compiler's
# libraries (their include paths propagate); tests/layering/check_layering.py checks that, and every
# rule above, on the sources (ctest -L layering).
function(scanforge_include_root target out_var)
  get_target_property(dir ${target} SOURCE_DIR)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${dir})
  string(REGEX MATCH "^[^/]+" folder "${rel}")
  if(folder STREQUAL "dsl")
    set(visible dsl)
  elseif(folder STREQUAL "runtime")
    set(visible runtime)
  elseif(folder STREQUAL "compiler")
    set(visible compiler dsl runtime)
  else()
    set(${out_var} ${PROJECT_SOURCE_DIR} PARENT_SCOPE)
    return()
  endif()
  set(view ${PROJECT_BINARY_DIR}/include-views/${folder})
  file(MAKE_DIRECTORY ${view})
  foreach(name IN LISTS visible)
    if(NOT IS_SYMLINK ${view}/${name})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${name} ${view}/${name} SYMBOLIC)
    endif()
  endforeach()
  set(${out_var} ${view} PARENT_SCOPE)
endfunction()
