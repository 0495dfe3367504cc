"""A call whose parameters let a state's decay exceed 1 in magnitude gives a Python UserWarning,
once per loaded recurrence, naming the parameter's element and the condition it breaks
(docs/dsl.md, "Decays above 1"): on the CPU programs and on the CUDA dispatch (here through the
concurrent emulator, as test_cuda_dispatch.py runs it)."""
import os
import warnings

import pytest
import torch

import scanforge
from conftest import model, random_call


def fresh_ssm(tmp_path):
    """The selective SSM under a path of its own: a recurrence no earlier call has warned for."""
    path = tmp_path / "selective_ssm.scan"
    with open(model("selective_ssm")) as source:
        path.write_text(source.read())
    return scanforge.load(str(path))


def check_warns_once(rec, every_call=True):
    """No warning while every decay exp(softplus(dt) * A) is below 1; one naming A[1, 2] once it is
    0.5; none after that (given once per recurrence). `every_call` False: only the first call is
    checked, so it is the one with A[1, 2] = 0.5."""
    tensors, _ = random_call(rec, torch.float32)
    tensors["A"] = -tensors["A"].abs() - 0.1
    if every_call:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rec(**tensors)
    tensors["A"][1, 2] = 0.5
    with pytest.warns(UserWarning, match=r"selective_ssm\.forward: parameter A\[1, 2\] = 0\.5 breaks A <= 0"):
        rec(**tensors)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec(**tensors)


def test_a_decay_above_one_warns_once(tmp_path):
    check_warns_once(fresh_ssm(tmp_path))


def test_the_first_step_warns(tmp_path):
    rec = fresh_ssm(tmp_path)
    tensors, _ = random_call(rec, torch.float32)
    tensors["A"] = -tensors["A"].abs() - 0.1
    tensors["A"][0, 1] = 2.0
    one_step = {name: (t[:, 0] if name in ("x", "dt", "B", "C") else t) for name, t in tensors.items()}
    with pytest.warns(UserWarning, match=r"selective_ssm\.step: parameter A\[0, 1\] = 2 breaks A <= 0"):
        rec.step(**one_step)


@pytest.mark.skipif(not os.environ.get("SCANFORGE_TORCH_EMULATION"), reason="SCANFORGE_TORCH_EMULATION is unset (ctest sets it)")
def test_the_cuda_dispatch_warns(tmp_path):
    torch.ops.load_library(os.environ["SCANFORGE_TORCH_EMULATION"])
    torch.ops.scanforge_testing.emulate_cuda(True)
    try:
        check_warns_once(fresh_ssm(tmp_path), every_call=False)
    finally:
        torch.ops.scanforge_testing.emulate_cuda(False)
