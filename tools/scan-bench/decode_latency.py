"""Per-token latency of decoding from Python (rec.step on CPU float32 tensors), the counterpart of
`scan-bench --decode`: PYTHONPATH=build/python python3 tools/scan-bench/decode_latency.py [D] [tokens]"""
import os
import statistics
import sys
import time

import torch

import scanforge

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    channels = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rec = scanforge.load(os.path.join(REPO, "models", "mingru.scan"))
    print("| recurrence | B | dims | µs per token (median) | best |\n|---|---|---|---|---|")
    for batch in (1, 64):
        k, u = (torch.rand(batch, channels) + 0.05 for _ in range(2))
        state = None
        _, state = rec.step(k=k, u=u, state=state)  # JIT and buffers on the first step
        times = []
        for _ in range(tokens):
            begin = time.perf_counter()
            _, state = rec.step(k=k, u=u, state=state)
            times.append((time.perf_counter() - begin) * 1e6)
        print(f"| mingru | {batch} | {channels} | {statistics.median(times):.1f} | {min(times):.1f} |")


if __name__ == "__main__":
    main()
