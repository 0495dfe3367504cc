#!/usr/bin/python3
"""ctest toolchain_two_llvms: LLVM 14 (under Halide) and LLVM 19 (under MLIR) in one process.

Usage: check_two_llvms.py READELF LDD BINARY

scanc (and every test that runs the compiler) loads libHalide14.so.0, linked against LLVM 14, and
libMLIR.so.19.1, linked against LLVM 19: two libLLVMs whose C++ symbols mostly have the same
names. This works only because Debian builds each libLLVM with versioned symbols (LLVM_14,
LLVM_19.1) and every user of them records which version it needs, so the dynamic loader binds
Halide's calls to LLVM 14 and MLIR's to LLVM 19 even though LLVM 19 comes first in the lookup
order (docs/architecture.md, "Two LLVMs in one process"). Checked on BINARY and the libraries
`ldd` resolves for it:
  1. both LLVMs are loaded, and each libLLVM defines its symbols under its own version;
  2. the version needs of BINARY and its libraries name both LLVM_14 and LLVM_19.x;
  3. every LLVM symbol a library takes from a libLLVM is bound to a version;
  4. no library built against one LLVM defines, unversioned, a symbol that a user of the other LLVM
     needs and that the loader would find first.
The functional side -- one process JIT-compiling with Halide after running MLIR passes -- is
tests/lit/scanc/run.test (`scanc run`, the CPU backend against the reference interpreter).
"""
import os
import re
import subprocess
import sys

WHY = ("Without symbol versions the dynamic loader binds every call to the first definition of a "
       "name in load order, so Halide would call LLVM 19 functions (or MLIR LLVM 14 ones) built for "
       "a different ABI: crashes or silent corruption. Use Debian's libLLVM packages (versioned "
       "symbols), or build both LLVMs with LLVM_VERSION_SUFFIX / a version script.")


def run(*cmd):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=True).stdout


def loaded_objects(ldd, binary):
    """[(name, path)] in the loader's breadth-first order, the binary first."""
    objects = [(os.path.basename(binary), os.path.realpath(binary))]
    for line in run(ldd, binary).splitlines():
        m = re.match(r"\s*(\S+) => (\S+) \(0x", line)
        if m:
            objects.append((m.group(1), m.group(2)))
        elif "not found" in line:
            sys.exit(f"toolchain_two_llvms: FAIL: {binary}: {line.strip()}")
    return objects


def versions(readelf, path):
    """(defined version names, [(file, needed version name)]) from readelf -V."""
    defined, needed, section, current = [], [], None, None
    for line in run(readelf, "-V", "-W", path).splitlines():
        if line.startswith("Version definition section"):
            section = "def"
        elif line.startswith("Version needs section"):
            section = "need"
        elif line.startswith("Version symbols section"):
            section = None
        elif section == "def":
            m = re.search(r"Flags: (\S+).*Name: (\S+)", line)
            if m and m.group(1) != "BASE":
                defined.append(m.group(2))
        elif section == "need":
            m = re.search(r"File: (\S+)", line)
            if m:
                current = m.group(1)
            m = re.search(r"Name: (\S+)", line)
            if m and current:
                needed.append((current, m.group(1)))
    return defined, needed


def dynamic_symbols(readelf, path):
    """(defined {name: version or None}, undefined {name: version or None})."""
    defined, undefined = {}, {}
    for line in run(readelf, "-W", "--dyn-syms", path).splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].endswith(":"):
            continue
        m = re.match(r"([^@]+)(?:@@?([^\s@]+))?", fields[7])
        if not m:
            continue
        name, version = m.group(1), m.group(2)
        if fields[6] == "UND":
            undefined[name] = version
        elif fields[4] != "LOCAL":
            defined[name] = version
    return defined, undefined


def main():
    readelf, ldd, binary = sys.argv[1], sys.argv[2], sys.argv[3]
    failures = []
    objects = loaded_objects(ldd, binary)

    # 1. Both LLVMs, each versioned.
    llvms = {}  # version -> (index in load order, name)
    for index, (name, path) in enumerate(objects):
        if not re.match(r"libLLVM[-.]", name):
            continue
        defined, _ = versions(readelf, path)
        llvm_versions = [v for v in defined if v.startswith("LLVM_")]
        if not llvm_versions:
            failures.append(f"{name} ({path}) defines no symbol version: its symbols are unversioned. {WHY}")
            continue
        for v in llvm_versions:
            llvms[v] = (index, name)
        print(f"{name}: defines version {', '.join(llvm_versions)} ({path})")
    v14 = [v for v in llvms if v == "LLVM_14"]
    v19 = [v for v in llvms if re.fullmatch(r"LLVM_19(\.\d+)*", v)]
    if not v14 or not v19:
        failures.append(f"{binary} does not load both LLVM 14 and LLVM 19 (found: {sorted(llvms) or 'none'}); "
                        "the arrangement this test guards is gone -- update docs/architecture.md and this test")

    # 2. Version needs over the binary and its libraries; 3. versioned LLVM references.
    relevant = [(i, n, p) for i, (n, p) in enumerate(objects) if re.match(r"(libLLVM|libMLIR|libHalide)", n) or i == 0]
    symbols = {n: dynamic_symbols(readelf, p) for _, n, p in relevant}
    llvm_names = {n for v, (i, n) in llvms.items()}
    needs = {}
    for index, name, path in relevant:
        _, needed = versions(readelf, path)
        for file, version in needed:
            if version in llvms:
                needs.setdefault(version, []).append(name)
        if name in llvm_names:
            continue
        defined_by_llvm = set()
        for lname in llvm_names:
            defined_by_llvm |= set(symbols[lname][0])
        unversioned = sorted(s for s, v in symbols[name][1].items() if v is None and s in defined_by_llvm)
        if unversioned:
            failures.append(f"{name} takes {len(unversioned)} LLVM symbol(s) without a version, e.g. {unversioned[0]}. {WHY}")
    for version in sorted(llvms):
        users = needs.get(version, [])
        print(f"version need {version}: {', '.join(users) if users else 'none'}")
    for label, found in (("LLVM_14", v14), ("LLVM_19.x", v19)):
        if found and not any(needs.get(v) for v in found):
            failures.append(f"no object loaded by {binary} needs {label}: its users bind to LLVM unversioned. {WHY}")

    # 4. Collisions the versions resolve, and unversioned definitions that would defeat them.
    for version, (llvm_index, llvm_name) in sorted(llvms.items()):
        users = [n for n in needs.get(version, []) if n in symbols]
        wanted = {s for n in users for s, v in symbols[n][1].items() if v == version}
        others = [n for v, (i, n) in llvms.items() if v != version]
        same_name = {s for o in others for s in wanted if s in symbols[o][0]}
        print(f"{version}: {len(wanted)} symbols needed by {', '.join(users)}; "
              f"{len(same_name)} of them are also defined by {', '.join(others) or 'no other LLVM'}")
        for index, name, path in relevant:
            if name in llvm_names or index >= llvm_index or name in users:
                continue
            clash = sorted(s for s in wanted if symbols[name][0].get(s, "x") is None)
            if clash:
                failures.append(f"{name} defines {len(clash)} symbol(s) unversioned that users of {version} need "
                                f"and would bind to first, e.g. {clash[0]}. {WHY}")

    for f in failures:
        print(f"toolchain_two_llvms: FAIL: {f}")
    if failures:
        return 1
    print(f"toolchain_two_llvms: ok: {binary} loads LLVM 14 and LLVM 19, kept apart by symbol versions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
