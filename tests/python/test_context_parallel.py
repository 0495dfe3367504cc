"""Context parallelism (docs/context-parallel.md): 2, 3 and 4 gloo processes on 127.0.0.1, each with
a slice of the time axis, against one process running the whole sequence: outputs, final states
and every gradient (inputs, the initial state on the chain's first rank, parameters summed over
ranks) within 1e-6 relative in float64 for every model of models/ and a reverse recurrence, with
and without initial states; float32 on the CPU backend within 1e-5."""
import datetime
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import scanforge
from conftest import MODELS, as_tuple, model, random_call, rel_error

REVERSE = """reverse recurrence backwards_glu(m[d], v[d]; lambda[d]) -> h[d] {
  h = sigmoid(lambda) * h + m * v
}
"""
STEPS = 13  # split unevenly: 7+6, 4+3+3+3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_loss(rec, tensors, initial, weights, final_weights, group=None, first=True, last=True):
    """Outputs, finals and the gradients of sum(weights * outputs) (+ sum(final_weights * finals)
    where `last`) in every leaf; the initial state is a leaf only where `first`."""
    tensors = {n: t.detach().clone().requires_grad_() for n, t in tensors.items()}
    initial = {n: t.detach().clone().requires_grad_() for n, t in initial.items()}
    outputs, finals = rec(initial_state=initial, output_final_state=True, group=group, **tensors)
    outputs = as_tuple(outputs)
    loss = sum((o.double() * w).sum() for o, w in zip(outputs, weights))
    if last:
        loss = loss + sum((finals[n].double() * w).sum() for n, w in final_weights.items())
    loss.backward()
    grads = {n: t.grad for n, t in tensors.items()}
    grads.update({f"initial {n}": t.grad for n, t in initial.items()})
    return outputs, finals, grads


def check_one(rec, dtype, with_initial, bound, rank, world, seed):
    sig = rec.signature
    tensors, initial = random_call(rec, torch.float64, batch=2, steps=STEPS, size=3, seed=seed)
    tensors = {n: t.to(dtype) for n, t in tensors.items()}
    initial = {n: t.to(dtype if dtype == torch.float64 else torch.float32) for n, t in initial.items()} \
        if with_initial else {}
    gen = torch.Generator().manual_seed(seed + 1)
    outputs = as_tuple(rec(**tensors))
    weights = [torch.rand(o.shape, generator=gen, dtype=torch.float64) for o in outputs]
    final_weights = {s.name: torch.rand(2, *[3] * len(s.dims), generator=gen, dtype=torch.float64)
                     for s in sig.states}
    want_out, want_finals, want_grads = run_loss(rec, tensors, initial, weights, final_weights)

    # This rank's slice; the chain starts at rank 0, or at the last rank for a reverse recurrence.
    bounds = [0] + [int(c[-1]) + 1 for c in torch.tensor_split(torch.arange(STEPS), world)]
    lo, hi = bounds[rank], bounds[rank + 1]
    inputs = {p.name for p in sig.inputs}
    mine = {n: (t[:, lo:hi] if n in inputs else t) for n, t in tensors.items()}
    first, last = (rank == world - 1, rank == 0) if sig.reverse else (rank == 0, rank == world - 1)
    got_out, got_finals, got_grads = run_loss(rec, mine, initial, [w[:, lo:hi] for w in weights], final_weights,
                                              group=dist.group.WORLD, first=first, last=last)

    what = f"{sig.name} {dtype} {'with' if with_initial else 'without'} initial state, rank {rank} of {world}"

    def close(name, got, want):
        err = rel_error(got, want) if want.abs().max() > 0 else got.abs().max().item()
        assert err <= bound, f"{what}: {name}: relative error {err:.2e} > {bound:.0e}"

    for i, (g, w) in enumerate(zip(got_out, want_out)):
        close(f"output {i}", g, w[:, lo:hi])
    for n, g in got_grads.items():
        if n.startswith("initial "):
            if first:
                close(f"d/d({n})", g, want_grads[n])
            else:
                assert g is None, f"{what}: the initial state counts on the chain's first rank only"
        elif n in inputs:
            close(f"d/d{n}", g, want_grads[n][:, lo:hi])
        else:
            total = g.clone()
            dist.all_reduce(total)
            close(f"d/d{n} summed over ranks", total, want_grads[n])
    if last:
        for n, g in got_finals.items():
            close(f"final {n}", g, want_finals[n])


def worker(rank, world, port, reverse_path):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        for seed, path in enumerate(MODELS + [reverse_path]):
            rec = scanforge.load(path)
            for with_initial in (False, True):
                check_one(rec, torch.float64, with_initial, 1e-6, rank, world, seed)
        check_one(scanforge.load(model("mingru")), torch.float32, True, 1e-5, rank, world, 99)
        check_one(scanforge.load(model("selective_ssm")), torch.float32, True, 1e-5, rank, world, 98)
    finally:
        dist.destroy_process_group()


# Two ranks (a first and a last) and four (two middle ranks between them); each spawned process
# imports torch, which is most of this test's time.
@pytest.mark.parametrize("world", [2, 4])
def test_context_parallel_equals_one_process(world, tmp_path):
    reverse = tmp_path / "backwards_glu.scan"
    reverse.write_text(REVERSE)
    mp.spawn(worker, args=(world, free_port(), str(reverse)), nprocs=world, join=True)


def test_one_rank_is_the_plain_call():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        check_one(scanforge.load(model("minlstm")), torch.float64, True, 1e-12, 0, 1, 5)
    finally:
        dist.destroy_process_group()


def test_transition_is_the_product_of_the_coefficients():
    """The slice transition of glu_rnn (h = lambda * h + m * v) from ones: lambda^T, per channel."""
    rec = scanforge.load(model("glu_rnn"))
    tensors, _ = random_call(rec, torch.float64, batch=2, steps=7, size=3, seed=3)
    transition = torch.ops.scanforge.load(model("glu_rnn"), "", True)
    ones = torch.ones(2, 3, dtype=torch.float64)
    (a,) = torch.ops.scanforge.scan(transition, [tensors["m"], tensors["v"]], [tensors["lambda"]], ["h"], [ones])
    assert torch.allclose(a, tensors["lambda"].pow(7).expand(2, 3), rtol=1e-14)


def test_context_parallel_errors(tmp_path):
    rec = scanforge.load(model("mingru"))
    tensors, _ = random_call(rec, torch.float32)
    with pytest.raises(ValueError, match="cu_seqlens and group"):
        rec(**{n: t[:1] for n, t in tensors.items()}, cu_seqlens=torch.tensor([0, 5], dtype=torch.int32),
            group=object())


@pytest.mark.skipif(not os.environ.get("SCANFORGE_TORCH_EMULATION"), reason="SCANFORGE_TORCH_EMULATION is unset")
@pytest.mark.parametrize("path", MODELS, ids=lambda p: os.path.basename(p)[:-5])
def test_transition_kernels_on_the_cuda_dispatch(path):
    """Every model's slice transition through the generated CUDA kernels (the concurrent emulator,
    behind the test-only switch) against the float64 reference: within 1e-5 in float32."""
    rec = scanforge.load(path)
    tensors, initial = random_call(rec, torch.float64, batch=2, steps=9, size=3, seed=4)
    transition = torch.ops.scanforge.load(path, "", True)
    sig = rec.signature
    inputs = [tensors[p.name] for p in sig.inputs]
    params = [tensors[p.name] for p in sig.params]
    names = [s.name for s in sig.states]
    ones = [torch.ones_like(initial[n]) for n in names]
    want = torch.ops.scanforge.scan(transition, inputs, params, names, ones)
    torch.ops.load_library(os.environ["SCANFORGE_TORCH_EMULATION"])
    torch.ops.scanforge_testing.emulate_cuda(True)
    try:
        got = torch.ops.scanforge.scan(transition, [t.float() for t in inputs], [t.float() for t in params], names,
                                       [t.float() for t in ones])
    finally:
        torch.ops.scanforge_testing.emulate_cuda(False)
    assert len(got) == len(names)
    for name, g, w in zip(names, got, want):
        err = rel_error(g, w)
        assert err <= 1e-5, f"{sig.name} transition of {name}: relative error {err:.2e}"
