#!/usr/bin/python3
"""ctest toolchain_selftest: check_two_llvms.py on stand-ins (tests/toolchain/CMakeLists.txt).

Usage: selftest.py CHECKER READELF LDD GOOD BAD
GOOD links a "Halide" library against a versioned LLVM 14 stand-in and an "MLIR" library against a
versioned LLVM 19 stand-in; BAD is the same with the LLVM 19 stand-in unversioned. Expected: the
checker passes GOOD and fails BAD naming the unversioned library; GOOD's calls reach their own LLVM
(exit 0); in BAD, one of them lands in the other LLVM (exit 1; with glibc the MLIR stand-in's
unversioned reference binds to LLVM 14's default version) -- the failure the checker exists to
prevent.
"""
import re
import subprocess
import sys

checker, readelf, ldd, good, bad = sys.argv[1:6]
failures = []


def run(*cmd):
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    print(f"$ {' '.join(cmd)} -> exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


p = run(sys.executable, checker, readelf, ldd, good)
if p.returncode != 0:
    failures.append("the checker fails the versioned stand-ins")
p = run(sys.executable, checker, readelf, ldd, bad)
if (p.returncode != 1 or not re.search(r"libLLVM-standin19u\.so \(.*\) defines no symbol version", p.stdout)
        or "Without symbol versions" not in p.stdout):
    failures.append("the checker does not report the unversioned LLVM 19 stand-in with its explanation")
p = run(good)
if p.returncode != 0 or "halide stand-in reaches LLVM 14, mlir stand-in reaches LLVM 19" not in p.stdout:
    failures.append("the versioned stand-ins do not each reach their own LLVM")
p = run(bad)
if p.returncode != 1 or "halide stand-in reaches LLVM 14, mlir stand-in reaches LLVM 19" in p.stdout:
    failures.append("with an unversioned LLVM 19 stand-in, one call was expected to land in the other LLVM")

for f in failures:
    print(f"toolchain selftest: FAIL: {f}")
if not failures:
    print("toolchain selftest: ok")
sys.exit(1 if failures else 0)
