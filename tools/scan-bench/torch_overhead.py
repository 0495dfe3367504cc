#!/usr/bin/python3
"""Per-call cost of scanforge's PyTorch op against the C++ API (scan-bench) on the same shapes:
mingru in float32 on the CPU (Halide), forward alone (under torch.no_grad) and forward + backward
(the op's backward recomputes the forward's checkpoints, docs/python.md). Best of --repeats, after
a warm-up that includes the JIT compilation; both run the same Halide programs on their own
threads (one per core). scan-bench writes into buffers it reuses; the op allocates its results.

usage: PYTHONPATH=build/python /usr/bin/python3 tools/scan-bench/torch_overhead.py build/bin/scan-bench
"""
import argparse
import os
import re
import subprocess
import time

import torch

import scanforge

SHAPES = [(1, 16, 16), (8, 256, 128), (8, 4096, 512)]
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def best_ms(repeats, fn):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def cpp_ms(scan_bench, B, T, D, repeats):
    out = subprocess.run([scan_bench, "--only", "mingru", "--no-peers", "-B", str(B), "-T", str(T), "-D", str(D),
                          "--repeats", str(repeats), "--models", os.path.join(REPO, "models")],
                         check=True, capture_output=True, text=True).stdout
    times = dict(re.findall(r"\| mingru \| [^|]+ \| (forward|forward\+backward) \| ([0-9.e+-]+) \|", out))
    return float(times["forward"]), float(times["forward+backward"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scan_bench")
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    rec = scanforge.load(os.path.join(REPO, "models", "mingru.scan"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads\n")
    print("| shape | pass | C++ API (ms) | PyTorch op (ms) | overhead (µs) |\n|---|---|---|---|---|")
    for B, T, D in SHAPES:
        repeats = args.repeats if B * T * D < 1 << 20 else 7
        gen = torch.Generator().manual_seed(0)
        k, u = (torch.rand(B, T, D, generator=gen) * 2 - 1 for _ in range(2))
        with torch.no_grad():
            fwd = best_ms(repeats, lambda: rec(k=k, u=u))
        kg, ug = k.clone().requires_grad_(), u.clone().requires_grad_()
        weights = torch.rand(B, T, D, generator=gen)

        def step():  # as a training step: gradients set to None, not accumulated
            kg.grad = ug.grad = None
            rec(k=kg, u=ug).backward(weights)
        both = best_ms(repeats, step)
        c_fwd, c_both = cpp_ms(args.scan_bench, B, T, D, repeats)
        shape = f"B={B} T={T} d={D}"
        print(f"| {shape} | forward | {c_fwd:.4g} | {fwd:.4g} | {(fwd - c_fwd) * 1e3:.0f} |")
        print(f"| {shape} | forward+backward | {c_both:.4g} | {both:.4g} | {(both - c_both) * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
