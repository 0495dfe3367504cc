#!/usr/bin/python3
"""The repository is self-contained: no file cites a document outside it (docs/architecture.md).

Usage: check_citations.py ROOT      prints `file:line: cites ...` per citation, exits 1 if any
       check_citations.py --self-test

Forbidden: a Markdown document that is not one of the repository's own (the original design
document lives outside it; docs/architecture.md holds what the code needs from it),
../shared/reference and ../shared/papers documents, and papers/NNN paths
(cite "paper NNN", listed in docs/architecture.md, "Papers"). Data files such as
../shared/data/tinyshakespeare.txt are inputs, not citations, and stay allowed; so is a CUDA source
../shared/reference/NAME.cu that a test reads and compiles (the GPU model's calibration probe),
and nothing else under shared/reference.
"""
import os
import re
import sys
import tempfile

FORBIDDEN = re.compile(r"shared/reference(?!/[\w-]+\.cu(?![\w.]))|shared/papers|(?<![\w.])papers/\d{3}")
MARKDOWN = re.compile(r"(?<![\w.-])[\w-]+\.md\b")  # a document named by its file name
SELF = os.path.realpath(__file__)


def files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not (rel_dir == "." and d.startswith("build")))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.realpath(path) != SELF:
                yield path


def check(root):
    found, scanned = [], 0
    own = {os.path.basename(path) for path in files(root) if path.endswith(".md")}
    for path in files(root):
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, OSError):
            continue  # binary
        scanned += 1
        for number, line in enumerate(lines, 1):
            cited = [m.group(0) for m in [FORBIDDEN.search(line)] if m]
            cited += [name for name in MARKDOWN.findall(line) if name not in own]
            for name in cited:
                found.append(f"{os.path.relpath(path, root)}:{number}: cites {name}, which is not in the "
                             "repository (see docs/architecture.md)")
    return found, scanned


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(f"{root}/runtime")
        with open(f"{root}/runtime/CMakeLists.txt", "w") as f:
            f.write("# never depends on compiler/ (OUTSIDE.md §1); see README.md\n")
        with open(f"{root}/README.md", "w") as f:
            f.write("data: ../shared/data/tinyshakespeare.txt\nsee ../shared/papers/README.md\n"
                    "the log-space scan (papers/000, B.3); paper 000 is fine\n"
                    "probe: ../shared/reference/mingru_probe.cu\nsee ../shared/reference/README.md\n"
                    "../shared/reference/probe.cu.md\n../shared/reference\n")
        found, _ = check(root)
        expected = ["README.md:2: cites shared/papers", "README.md:3: cites papers/000",
                    "README.md:5: cites shared/reference", "README.md:6: cites shared/reference",
                    "README.md:7: cites shared/reference", "runtime/CMakeLists.txt:1: cites OUTSIDE.md"]
        got = sorted(line.split(", which", 1)[0] for line in found)
        print("\n".join(found))
        if got != expected:
            print(f"check_citations self-test: FAIL: expected {expected}, got {got}")
            return 1
    print("check_citations self-test: ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1])
    found, scanned = check(root)
    if scanned == 0:
        print(f"check_citations: no text file under {root}", file=sys.stderr)
        return 2
    for line in found:
        print(line)
    if found:
        return 1
    print(f"check_citations: {scanned} files under {root}, no citation outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
