#!/usr/bin/env python3
"""Peer for scan-bench: the paper's log-space minGRU (paper 000, B.3; docs/architecture.md, "Papers")
in PyTorch on the CPU.
usage: pytorch_peer.py B T D REPEATS THREADS  ->  prints one JSON line with the best milliseconds of REPEATS."""
import json
import sys
import time

import torch
import torch.nn.functional as F


def parallel_scan_log(log_coeffs, log_values):
    a_star = F.pad(torch.cumsum(log_coeffs, dim=1), (0, 0, 1, 0))
    log_h0_plus_b_star = torch.logcumsumexp(log_values - a_star, dim=1)
    return torch.exp(a_star + log_h0_plus_b_star)[:, 1:]


def log_g(x):
    return torch.where(x >= 0, (F.relu(x) + 0.5).log(), -F.softplus(-x))


def mingru(k, u, log_h0):
    return parallel_scan_log(-F.softplus(k), torch.cat([log_h0, -F.softplus(-k) + log_g(u)], dim=1))


def best_ms(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        fn()
        times.append((time.perf_counter() - begin) * 1e3)
    return min(times)


def main():
    B, T, D, repeats, threads = (int(a) for a in sys.argv[1:6])
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    k = torch.randn(B, T, D, generator=gen, requires_grad=True)
    u = torch.randn(B, T, D, generator=gen, requires_grad=True)
    log_h0 = torch.zeros(B, 1, D)
    dh = torch.randn(B, T, D, generator=gen)

    def forward():
        with torch.no_grad():
            mingru(k, u, log_h0)

    def forward_backward():
        h = mingru(k, u, log_h0)
        h.backward(dh)

    print(json.dumps({"torch": torch.__version__, "threads": threads,
                      "forward_ms": best_ms(forward, repeats),
                      "forward_backward_ms": best_ms(forward_backward, repeats)}))


if __name__ == "__main__":
    main()
