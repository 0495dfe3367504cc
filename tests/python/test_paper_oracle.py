"""External oracle: paper 000's log-space minGRU and minLSTM (appendix B.3, written in plain
PyTorch in tests/oracle/pytorch_logspace.py) against scanforge's ops, outputs and gradients of the
inputs and of h_0. float64 (reference interpreter): 1e-9, the log-space scan loses a few digits;
float32 (Halide): 1e-5."""
import os
import sys

import pytest
import torch

from conftest import REPO, model, rel_error

sys.path.insert(0, os.path.join(REPO, "tests", "oracle"))
_default = torch.get_default_dtype()
import pytorch_logspace as paper  # noqa: E402  (sets float64 as the default dtype: restored below)

torch.set_default_dtype(_default)

import scanforge  # noqa: E402

CASES = {"mingru": (["k", "u"], paper.mingru_logspace), "minlstm": (["f", "i", "u"], paper.minlstm_logspace)}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype,bound", [(torch.float64, 1e-9), (torch.float32, 1e-5)], ids=["float64", "float32"])
def test_matches_paper_logspace(name, dtype, bound):
    ports, paper_fn = CASES[name]
    gen = torch.Generator().manual_seed(1234)
    B, T, D = 3, 64, 5
    xs = {n: torch.rand(B, T, D, generator=gen, dtype=torch.float64) * 4 - 2 for n in ports}
    h_0 = torch.rand(B, 1, D, generator=gen, dtype=torch.float64) * 2 - 1
    weights = torch.rand(B, T, D, generator=gen, dtype=torch.float64) * 2 - 1

    want_x = {n: t.clone().requires_grad_() for n, t in xs.items()}
    want_h0 = h_0.clone().requires_grad_()
    want = paper_fn(*[want_x[n] for n in ports], want_h0)
    (want * weights).sum().backward()

    # The paper starts from log_g(h_0), i.e. from the state g(h_0).
    got_x = {n: t.to(dtype).requires_grad_() for n, t in xs.items()}
    got_h0 = h_0.to(dtype).requires_grad_()
    got = scanforge.load(model(name))(initial_state={"h": paper.g(got_h0)[:, 0, :]}, **got_x)
    (got.double() * weights).sum().backward()

    assert rel_error(got, want) <= bound
    for n in ports:
        assert rel_error(got_x[n].grad, want_x[n].grad) <= bound, f"d/d{n}"
    assert rel_error(got_h0.grad, want_h0.grad) <= bound, "d/dh_0"
