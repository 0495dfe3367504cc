#!/usr/bin/python3
"""ctest install_library_exports: what libscanforge.so exports (cmake/scanforge.exports).

Usage: check_exports.py NM LIBRARY

Checks, on `nm -D --defined-only`:
  * the API's entry points are exported (compile, compileSource, Recurrence::forward/backward...);
  * no symbol of the project's internal namespaces (scanforge::cpu::, scanforge::scan::, ...: any
    scanforge::<lowercase>::) is exported;
  * every strong definition exported is the API's (scanforge::...): no code
    of LLVM, MLIR, Halide or the standard library is linked into the library and re-exported --
    they are shared libraries it needs. The other exports are weak or unique definitions that their
    headers instantiate, which must stay global (one copy per process; MLIR's TypeIDs live there).
"""
import re
import subprocess
import sys

REQUIRED = [
    "scanforge::compile(",
    "scanforge::compileSource(",
    "scanforge::Recurrence::forward(",
    "scanforge::Recurrence::backward(",
    "scanforge::Recurrence::step(",
    "scanforge::Recurrence::forwardPacked(",
    "scanforge::Recurrence::backwardPacked(",
    "scanforge::Recurrence::signature(",
    "scanforge::Recurrence::shapesOf(",
]
API = re.compile(r"^(?:(?:typeinfo name|typeinfo|vtable|VTT) for )?scanforge::")
INTERNAL = re.compile(r"^(?:[a-zA-Z ]+ for )?scanforge::[a-z_][a-z0-9_]*::")
VAGUE = {"W", "V", "u", "w", "v"}  # weak functions and objects, GNU unique objects
LINKER = {"__bss_start", "_edata", "_end", "_init", "_fini"}  # defined by the linker in every library


def main():
    nm, library = sys.argv[1], sys.argv[2]
    out = subprocess.run([nm, "-D", "--defined-only", "-C", library], capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            if parts[2] not in LINKER:
                symbols.append((parts[1], parts[2]))
    names = [name for _, name in symbols]
    failures = []
    for entry in REQUIRED:
        if not any(name.startswith(entry) for name in names):
            failures.append(f"the API symbol {entry}...) is not exported")
    internal = [f"{kind} {name}" for kind, name in symbols if INTERNAL.match(name)]
    if internal:
        failures.append(f"{len(internal)} symbol(s) of internal namespaces exported (list the namespace in "
                        "cmake/scanforge.exports), e.g.:\n    " + "\n    ".join(internal[:15]))
    foreign = [f"{kind} {name}" for kind, name in symbols if kind not in VAGUE and not API.match(name)]
    if foreign:
        failures.append(f"{len(foreign)} strong definition(s) outside the scanforge:: API exported, e.g.:\n    "
                        + "\n    ".join(foreign[:15]))
    ours = sum(1 for kind, name in symbols if kind not in VAGUE)
    print(f"{library}: {len(symbols)} exported symbols: {ours} strong (the API), "
          f"{len(symbols) - ours} weak or unique instantiations from headers")
    if not symbols:
        failures.append("nm listed no exported symbol")
    for f in failures:
        print(f"install_library_exports: FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
