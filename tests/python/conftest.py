"""Shared helpers of the scanforge PyTorch tests: every model of models/, and random calls on them."""
import glob
import os

import pytest
import torch

import scanforge

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = sorted(glob.glob(os.path.join(REPO, "models", "*.scan")))


def model(name):
    return os.path.join(REPO, "models", name + ".scan")


def random_call(rec, dtype, batch=2, steps=5, size=3, seed=0):
    """Random inputs and parameters (uniform in [-1, 1), never zeros) for every port of `rec`, every
    dimension of size `size`, and a random initial value of every state."""
    gen = torch.Generator().manual_seed(seed)
    sig = rec.signature

    def rand(*shape):
        return (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1).to(dtype)

    tensors = {p.name: rand(batch, steps, *[size] * len(p.dims)) for p in sig.inputs}
    tensors.update({p.name: rand(*[size] * len(p.dims)) for p in sig.params})
    initial = {s.name: rand(batch, *[size] * len(s.dims)) for s in sig.states}
    return tensors, initial


def as_tuple(outputs):
    """A recurrence's outputs as a tuple (a single output comes back as a tensor)."""
    return outputs if isinstance(outputs, tuple) else (outputs,)


def rel_error(got, want):
    got, want = got.double(), want.double()
    return (torch.linalg.norm(got - want) / torch.linalg.norm(want)).item()


def outputs_and_grads(rec, tensors, initial, weights):
    """Outputs, finals and the gradients of sum(weights * outputs) + sum(finals) in every leaf."""
    tensors = {n: t.detach().clone().requires_grad_() for n, t in tensors.items()}
    initial = {n: t.detach().clone().requires_grad_() for n, t in initial.items()}
    outputs, finals = rec(initial_state=initial, output_final_state=True, **tensors)
    outputs = as_tuple(outputs)
    loss = sum((o.double() * w).sum() for o, w in zip(outputs, weights))
    loss = loss + sum(f.double().sum() for f in finals.values())
    loss.backward()
    results = {f"output {i}": o for i, o in enumerate(outputs)}
    results.update({f"final {n}": f for n, f in finals.items()})
    results.update({f"d/d{n}": t.grad for n, t in list(tensors.items()) + list(initial.items())})
    return results


def check_against_float64(rec, dtype, bound, param_grad_bound, batch, steps, size, want_rec=None):
    """A `dtype` call of `rec` against a float64 call of `want_rec` (default: the same) on the same
    values: outputs, final states and every gradient within `bound` (parameter gradients, sums
    over B and T, within `param_grad_bound`)."""
    tensors, initial = random_call(rec, dtype, batch=batch, steps=steps, size=size, seed=7)
    want_rec = want_rec or rec
    as64 = {n: t.double() for n, t in tensors.items()}, {n: t.double() for n, t in initial.items()}
    gen = torch.Generator().manual_seed(8)
    weights = [torch.rand(o.shape, generator=gen, dtype=torch.float64) for o in as_tuple(want_rec(**as64[0]))]
    got = outputs_and_grads(rec, tensors, initial, weights)
    want = outputs_and_grads(want_rec, *as64, weights)
    params = {p.name for p in rec.signature.params}
    for what, value in got.items():
        assert value.dtype == dtype, what
        err = rel_error(value, want[what])
        limit = param_grad_bound if what[3:] in params else bound
        assert err <= limit, f"{rec.signature.name} {what}: relative error {err:.2e} > {limit:.0e}"


@pytest.fixture(params=MODELS, ids=lambda p: os.path.basename(p)[:-5])
def any_model(request):
    return scanforge.load(request.param)
