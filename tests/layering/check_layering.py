#!/usr/bin/python3
"""Checks the folder layering of scanforge (docs/architecture.md, "Layering") on #include lines.

Usage: check_layering.py ROOT

Scans every C/C++/CUDA source under ROOT (skipping .git and build directories) and prints one line
per forbidden include, `path:line: <folder>/ may not include <folder>/ (#include "...") -- reason`,
then exits 1; exits 0 when there is none. Both `#include "..."` and `#include <...>` lines naming a
project folder are checked, and a quoted include that resolves relative to its file (`"../x.h"`) is
checked by the file it names.

The rules, by the first folder of the including file (folders without a rule -- tools/, tests/,
python/, examples/ -- may include everything):

  dsl/       only dsl/: the front end depends on nothing else in the project.
  runtime/   only runtime/: no compiler/, dsl/ or models/, so that the runtime builds on GPU machines
             without MLIR or Halide (the runtime-only preset) and loads kernel packages written
             elsewhere.
  compiler/  no models/ (and no tools/ or tests/): the compiler knows recurrences, not the layers,
             tasks and trainers built on them.
  models/    compiler/ only through its public API, compiler/api/ (and no tools/ or tests/).

The build enforces part of this too (cmake/ScanforgeOptions.cmake: dsl/ and runtime/ targets see
only their own folders); this scan is the complete check.
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inc", ".def")
PROJECT_FOLDERS = ("dsl", "compiler", "runtime", "models", "tools", "tests")
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')

# including folder -> (forbidden prefix, exception prefixes, reason)
RULES = {
    "dsl": [
        ("compiler/", (), "the DSL front end depends on nothing else in the project"),
        ("runtime/", (), "the DSL front end depends on nothing else in the project"),
        ("models/", (), "the DSL front end depends on nothing else in the project"),
        ("tools/", (), "libraries never depend on tools"),
        ("tests/", (), "libraries never depend on tests"),
    ],
    "runtime": [
        ("compiler/", (), "the runtime never depends on the compiler: it builds without MLIR and Halide"),
        ("dsl/", (), "the runtime never depends on the compiler or its front end"),
        ("models/", (), "the runtime is below models/, which builds on it"),
        ("tools/", (), "libraries never depend on tools"),
        ("tests/", (), "libraries never depend on tests"),
    ],
    "compiler": [
        ("models/", (), "the compiler is below models/, which builds on it"),
        ("tools/", (), "libraries never depend on tools"),
        ("tests/", (), "libraries never depend on tests"),
    ],
    "models": [
        ("compiler/", ("compiler/api/",), "models/ uses the compiler only through its public API, compiler/api/"),
        ("tools/", (), "libraries never depend on tools"),
        ("tests/", (), "libraries never depend on tests"),
    ],
}


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not (rel_dir == "." and d.startswith("build")))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def project_path(root, path, quoted, included):
    """The project-relative path an include names, or None when it is not a project header."""
    included = included.strip()
    if included.split("/", 1)[0] in PROJECT_FOLDERS and "/" in included:
        return os.path.normpath(included)
    if quoted:
        candidate = os.path.normpath(os.path.join(os.path.dirname(path), included))
        if os.path.isfile(candidate):
            rel = os.path.relpath(candidate, root)
            if not rel.startswith(".."):
                return rel
    return None


def check(root):
    """Returns (violations, number of files checked, number of project includes checked)."""
    violations = []
    files = includes = 0
    for path in source_files(root):
        rel = os.path.relpath(path, root)
        folder = rel.split(os.sep, 1)[0]
        rules = RULES.get(folder)
        if not rules:
            continue
        files += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                quoted = m.group(1) is not None
                included = m.group(1) if quoted else m.group(2)
                target = project_path(root, path, quoted, included)
                if target is None:
                    continue
                target = target.replace(os.sep, "/")
                includes += 1
                for prefix, exceptions, reason in rules:
                    if target.startswith(prefix) and not target.startswith(exceptions):
                        shown = f'"{included}"' if quoted else f"<{included}>"
                        violations.append(f"{rel}:{number}: {folder}/ may not include {target} "
                                          f"(#include {shown}): {reason}")
                        break
    return violations, files, includes


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: check_layering.py ROOT", file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    violations, files, includes = check(root)
    if files == 0:
        print(f"check_layering: no source file under {root}/{{{','.join(sorted(RULES))}}}: wrong root?",
              file=sys.stderr)
        return 2
    for v in violations:
        print(v)
    if violations:
        print(f"check_layering: {len(violations)} forbidden include(s) under {root}; "
              "the layering is described in docs/architecture.md", file=sys.stderr)
        return 1
    print(f"check_layering: {includes} project includes in {files} files under {root}, none forbidden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
