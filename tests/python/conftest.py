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


@pytest.fixture(params=MODELS, ids=lambda p: os.path.basename(p)[:-5])
def any_model(request):
    return scanforge.load(request.param)
