#!/usr/bin/env python3
"""Peers for scan-gpu-bench, timed on the GPU on the same shapes as scanforge's kernels.

usage: peers.py [--repeats N] [--device cuda] REQUEST
REQUEST is a JSON list of {"recurrence", "shape": "B=64 T=4096 d=1024", "dtype"}; prints one JSON
object {"<recurrence> <shape> <pass>": {"<peer>": median ms, or "unavailable: <reason>"}}.

Every peer computes the same function from the same pre-activations as the .scan file (gate math
included, in PyTorch around the peer's scan kernel), forward and forward+backward (the log-space
peers start from h0 = 1, log h0 = 0, as the paper's code does; the cost is the same):
  mingru, minlstm: the paper's log-space PyTorch (paper 000, B.3; docs/architecture.md, "Papers"),
                   eager and torch.compile;
                   flash-linear-attention's HGRN kernels (fused_recurrent, chunk) on
                   h = exp(log_a) * h + b; accelerated-scan's warp scan on h = a * h + b.
  selective_ssm:   Mamba's selective_scan_fn (delta_softplus=True, D skip term).
Peers that are not installed are reported as unavailable, never silently left out.

A peer whose kernel wants another layout (accelerated-scan and Mamba take [B, channels, T]) is timed
on inputs already in its layout, converted once beforehand; the conversion (the transposes, and in
forward+backward the transposes of the gradients back) is timed on its own and reported as the entry
"<peer>: layout conversion", never inside the peer's time.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scan-bench"))
from pytorch_peer import log_g, mingru as mingru_log_space, parallel_scan_log  # noqa: E402


def minlstm_log_space(f, i, u, log_h0):
    diff = F.softplus(-f) - F.softplus(-i)
    return parallel_scan_log(-F.softplus(diff), torch.cat([log_h0, -F.softplus(-diff) + log_g(u)], dim=1))


def g(x):
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def gates(recurrence, xs):
    """(log a, b) of h = a * h + b from the pre-activations, as the .scan files define them."""
    if recurrence == "mingru":
        k, u = xs
        return -F.softplus(k), torch.sigmoid(k) * g(u)
    f, i, u = xs
    fs, is_ = torch.sigmoid(f), torch.sigmoid(i)
    return torch.log(fs / (fs + is_)), is_ / (fs + is_) * g(u)


def median_ms(fn, repeats):
    def synchronize():
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    fn()  # warm-up (compilation, autotuning)
    times = []
    for _ in range(repeats):
        synchronize()
        begin = time.perf_counter()
        fn()
        synchronize()
        times.append((time.perf_counter() - begin) * 1e3)
    return sorted(times)[len(times) // 2]


def channels_first(inputs):
    """[B, T, ...] per-step tensors as [B, ..., T] (Mamba's and accelerated-scan's layout); parameters
    (fewer than 3 dimensions) as they are."""
    return [x.transpose(1, 2).contiguous() if x.dim() >= 3 else x for x in inputs]


def time_forward_backward(fn, inputs, repeats):
    def forward():
        with torch.no_grad():
            fn(*inputs)

    def forward_backward():
        out = fn(*inputs)
        out.backward(torch.ones_like(out))

    return {"forward": median_ms(forward, repeats), "forward+backward": median_ms(forward_backward, repeats)}


def time_peer(make, inputs, repeats, layout=None):
    """{forward: ms, forward+backward: ms} of the function make() returns, on `inputs` converted by
    `layout` beforehand (untimed), or the reason it failed."""
    try:
        fn = make()
        if layout:
            inputs = [x.detach().requires_grad_(x.requires_grad) for x in layout(inputs)]
        return time_forward_backward(fn, inputs, repeats)
    except Exception as e:  # a missing or failing peer is reported, not fatal
        reason = "unavailable: " + f"{type(e).__name__}: {e}".splitlines()[0][:120]
        return {"forward": reason, "forward+backward": reason}


def time_layout(layout, inputs, repeats):
    """The conversion alone: the inputs' way in, and with it the gradients' way back."""
    def forward():
        with torch.no_grad():
            layout(inputs)

    def forward_backward():
        converted = [y for y, x in zip(layout(inputs), inputs) if x.dim() >= 3]
        torch.autograd.backward(converted, [torch.ones_like(y) for y in converted])

    return {"forward": median_ms(forward, repeats), "forward+backward": median_ms(forward_backward, repeats)}


def gated_scan_peers(recurrence, B, T, D):
    def log_space():
        if recurrence == "mingru":
            return lambda k, u: mingru_log_space(k, u, torch.zeros(B, 1, D, device=k.device))
        return lambda f, i, u: minlstm_log_space(f, i, u, torch.zeros(B, 1, D, device=f.device))

    def fla(kind):
        def make():
            from fla.ops.hgrn import chunk_hgrn, fused_recurrent_hgrn
            kernel = fused_recurrent_hgrn if kind == "fused_recurrent" else chunk_hgrn

            def run(*xs):
                log_a, b = gates(recurrence, xs)
                return kernel(b, log_a)[0]
            return run
        return make

    def accelerated():
        from accelerated_scan.warp import scan

        def run(*xs):  # pre-activations [B, D, T]: the gate math is element-wise, the scan runs along T
            log_a, b = gates(recurrence, xs)
            return scan(log_a.exp(), b)
        return run

    return {
        "log-space eager": (log_space, None),
        "log-space compiled": (lambda: torch.compile(log_space()), None),
        "FLA HGRN fused_recurrent": (fla("fused_recurrent"), None),
        "FLA HGRN chunk": (fla("chunk"), None),
        "accelerated-scan": (accelerated, channels_first),
    }


def mamba_peer():
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    def run(x, dt, Bm, Cm, A, Dskip):  # Mamba's layout: [B, d, T] and [B, n, T]
        return selective_scan_fn(x, dt, A, Bm, Cm, D=Dskip, delta_softplus=True)
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("request")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    result = {}
    for case in json.loads(args.request):
        sizes = dict(part.split("=") for part in case["shape"].split())
        B, T = int(sizes.pop("B")), int(sizes.pop("T"))
        dims = {k: int(v) for k, v in sizes.items()}
        dtype = torch.bfloat16 if case["dtype"] == "bf16" else torch.float32
        gen = torch.Generator(device=args.device).manual_seed(0)

        def rand(*shape, low=-2.0, high=2.0):
            x = torch.rand(*shape, generator=gen, device=args.device) * (high - low) + low
            return x.to(dtype).requires_grad_()

        recurrence = case["recurrence"]
        if recurrence in ("mingru", "minlstm"):
            D = dims["d"]
            inputs = [rand(B, T, D) for _ in range(2 if recurrence == "mingru" else 3)]
            peers = gated_scan_peers(recurrence, B, T, D)
        elif recurrence == "selective_ssm":
            D, N = dims["d"], dims["n"]
            inputs = [rand(B, T, D), rand(B, T, D), rand(B, T, N), rand(B, T, N),
                      rand(D, N, low=-1.0, high=-0.05).float().detach().requires_grad_(),
                      rand(D, low=-2.0, high=2.0).float().detach().requires_grad_()]
            peers = {"Mamba selective_scan": (mamba_peer, channels_first)}
        else:
            continue
        for name, (make, layout) in peers.items():
            timings = {name: time_peer(make, inputs, args.repeats, layout)}
            if layout and all(isinstance(ms, float) for ms in timings[name].values()):
                timings[f"{name}: layout conversion"] = time_layout(layout, inputs, args.repeats)
            for peer, stages in timings.items():
                for stage, ms in stages.items():
                    result.setdefault(f"{recurrence} {case['shape']} {stage}", {})[peer] = ms
        if args.device == "cuda":
            torch.cuda.empty_cache()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
