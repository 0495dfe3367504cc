#!/usr/bin/python3
"""Self-test of check_layering.py: on fixtures/violations it must exit 1 and report exactly the
forbidden includes planted there (and none of the allowed ones next to them); on fixtures/clean it
must exit 0. Usage: selftest.py CHECKER FIXTURES_DIR
"""
import subprocess
import sys

EXPECTED = [
    "compiler/halide/Bad.cpp:4: compiler/ may not include models/layers/ScanOp.h",
    "dsl/Bad.cpp:3: dsl/ may not include compiler/api/Scanforge.h",
    "models/layers/Bad.cpp:4: models/ may not include compiler/mlir/Driver.h",
    "runtime/Relative.cpp:2: runtime/ may not include compiler/api/Scanforge.h",
    "runtime/core/Bad.cpp:3: runtime/ may not include dsl/Diagnostics.h",
    "runtime/core/Bad.cpp:4: runtime/ may not include models/layers/Block.h",
]


def run(checker, root):
    p = subprocess.run([sys.executable, checker, root], capture_output=True, text=True)
    print(f"$ check_layering.py {root} -> exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def main():
    checker, fixtures = sys.argv[1], sys.argv[2]
    failures = []

    bad = run(checker, f"{fixtures}/violations")
    if bad.returncode != 1:
        failures.append(f"on fixtures/violations the checker exited {bad.returncode}, expected 1")
    reported = [line.split(" (#include", 1)[0] for line in bad.stdout.splitlines()]
    for line in EXPECTED:
        if line not in reported:
            failures.append(f"not reported: {line}")
    for line in reported:
        if line not in EXPECTED:
            failures.append(f"reported but allowed (or unexpected): {line}")

    clean = run(checker, f"{fixtures}/clean")
    if clean.returncode != 0 or clean.stdout.count("none forbidden") != 1:
        failures.append(f"on fixtures/clean the checker exited {clean.returncode}, expected 0")

    for f in failures:
        print(f"layering selftest: FAIL: {f}")
    if failures:
        return 1
    print(f"layering selftest: ok ({len(EXPECTED)} planted violations caught, allowed includes accepted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
