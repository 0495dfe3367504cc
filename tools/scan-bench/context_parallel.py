"""Context parallelism on the CPU over gloo (docs/context-parallel.md): the forward + backward of one
minGRU call split over W processes on 127.0.0.1, against one process running the whole sequence,
side by side in one run, and the bytes each rank sends and receives.

    PYTHONPATH=build/python /usr/bin/python3 tools/scan-bench/context_parallel.py [W] [B] [T] [D]

Every process's CPU programs use every core (the default), so both runs have the whole machine: on
a machine with few cores the split shows its overhead more than its parallelism; across devices
each rank has its own."""
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import scanforge

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REPEATS = 5


def timed(run):
    run()  # JIT and allocation
    times = []
    for _ in range(REPEATS):
        begin = time.perf_counter()
        run()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def fwd_bwd(rec, k, u, group=None):
    def run():
        k.grad = u.grad = None
        h = rec(k=k, u=u, group=group)
        h.sum().backward()
    return run


def worker(rank, world, port, shape, results):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    batch, steps, channels = shape
    rec = scanforge.load(os.path.join(REPO, "models", "mingru.scan"))
    gen = torch.Generator().manual_seed(rank)
    lo, hi = rank * steps // world, (rank + 1) * steps // world
    k, u = (torch.rand(batch, hi - lo, channels, generator=gen).requires_grad_() for _ in range(2))
    dist.barrier()
    seconds = timed(fwd_bwd(rec, k, u, dist.group.WORLD))
    times = [None] * world
    dist.all_gather_object(times, seconds)
    if rank == 0:
        results.put(max(times))
    dist.destroy_process_group()


def main():
    defaults = [2, 8, 16384, 512]
    world, batch, steps, channels = [int(a) for a in sys.argv[1:]] + defaults[len(sys.argv) - 1:]
    rec = scanforge.load(os.path.join(REPO, "models", "mingru.scan"))
    k, u = (torch.rand(batch, steps, channels).requires_grad_() for _ in range(2))
    alone = timed(fwd_bwd(rec, k, u))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(world, port, (batch, steps, channels), results), nprocs=world, join=True)
    split = results.get()
    state_bytes = batch * channels * 4
    print(f"minGRU fwd+bwd, B={batch} T={steps} D={channels}, float32, median of {REPEATS}")
    print("| processes | ms per call | ratio to one process | bytes sent per rank (fwd + bwd) |")
    print("|---|---|---|---|")
    print(f"| 1 | {alone * 1e3:.1f} | 1.00 | 0 |")
    print(f"| {world} | {split * 1e3:.1f} | {split / alone:.2f} | {2 * state_bytes} + {state_bytes} |")


if __name__ == "__main__":
    main()
