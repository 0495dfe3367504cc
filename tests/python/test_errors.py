"""Bad calls raise a Python exception naming the recurrence, the port and the shapes; none
crashes the process (every case runs in this one process)."""
import pytest
import torch

import scanforge
from conftest import model, random_call


@pytest.fixture
def ssm():
    rec = scanforge.load(model("selective_ssm"))
    tensors, initial = random_call(rec, torch.float32, batch=2, steps=5, size=3)
    return rec, tensors, initial


def test_missing_port(ssm):
    rec, tensors, _ = ssm
    del tensors["dt"]
    with pytest.raises(TypeError, match=r"selective_ssm: missing input 'dt' of shape \[B, T, d\]"):
        rec(**tensors)


def test_unknown_port(ssm):
    rec, tensors, _ = ssm
    with pytest.raises(TypeError, match=r"selective_ssm: unknown port\(s\) 'delta'"):
        rec(delta=tensors["dt"], **tensors)


def test_wrong_shape(ssm):
    rec, tensors, _ = ssm
    tensors["B"] = torch.rand(2, 5, 4)
    with pytest.raises(ValueError, match=r"selective_ssm: input 'C' \[2, 5, 3\] has n = 3, but input 'B' \[2, 5, 4\] has n = 4"):
        rec(**tensors)
    tensors["B"] = torch.rand(2, 6, 3)
    with pytest.raises(ValueError, match=r"selective_ssm: input 'B' \[2, 6, 3\] has T = 6, but input 'x' \[2, 5, 3\] has T = 5"):
        rec(**tensors)
    tensors["B"] = torch.rand(2, 5)
    with pytest.raises(ValueError, match=r"selective_ssm: input 'B' \[2, 5\] has 2 dimensions, expected 3 \[B, T, n\]"):
        rec(**tensors)
    tensors["B"] = torch.rand(2, 5, 3)
    with pytest.raises(ValueError, match=r"selective_ssm: parameter 'D' \[4\] has d = 4, but input 'x' \[2, 5, 3\] has d = 3"):
        rec(**dict(tensors, D=torch.rand(4)))


def test_wrong_initial_state(ssm):
    rec, tensors, initial = ssm
    with pytest.raises(ValueError, match=r"selective_ssm: initial state 's' has shape \[2, 3\], expected \[2, 3, 3\]"):
        rec(initial_state={"s": initial["s"][:, :, 0].contiguous()}, **tensors)
    with pytest.raises(ValueError, match=r"selective_ssm: 'h' is not a state of selective_ssm \(its states: 's'\)"):
        rec(initial_state={"h": initial["s"]}, **tensors)


def test_wrong_dtype(ssm):
    rec, tensors, _ = ssm
    with pytest.raises(TypeError, match=r"selective_ssm: input 'x' \[2, 5, 3\] is Int; scanforge takes float64"):
        rec(**dict(tensors, x=torch.ones(2, 5, 3, dtype=torch.int32)))
    with pytest.raises(TypeError, match=r"selective_ssm: parameter 'A' \[3, 3\] is Double, but input 'x' is Float"):
        rec(**dict(tensors, A=tensors["A"].double()))
    with pytest.raises(TypeError, match=r"selective_ssm: input 'x' is a list"):
        rec(**dict(tensors, x=[1.0]))


def test_mixed_devices(ssm):
    rec, tensors, _ = ssm
    # The meta device exists on every machine: a second device without a GPU.
    with pytest.raises(ValueError, match=r"selective_ssm: input 'C' \[2, 5, 3\] is on meta, but input 'x' is on cpu"):
        rec(**dict(tensors, C=tensors["C"].to("meta")))


def test_non_contiguous_input(ssm):
    rec, tensors, _ = ssm
    x = torch.rand(2, 3, 5).transpose(1, 2)
    with pytest.raises(ValueError, match=r"selective_ssm: input 'x' \[2, 5, 3\] \(strides \[15, 1, 5\]\) is not contiguous"):
        rec(**dict(tensors, x=x))


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match=r"cannot read '.*missing\.scan'"):
        scanforge.load(str(tmp_path / "missing.scan"))
    broken = tmp_path / "broken.scan"
    broken.write_text("recurrence broken(x[d]) -> h[d] {\n  h = h * \n}\n")
    with pytest.raises(ValueError, match=r"broken\.scan:3:1: error"):
        scanforge.load(str(broken))
    with pytest.raises(ValueError, match=r"mingru"):
        scanforge.load(model("mingru"), recurrence="nope")


def test_still_alive_after_the_errors(ssm):
    rec, tensors, _ = ssm
    assert rec(**tensors).shape == (2, 5, 3)


def test_positional_ports(ssm):
    # A positional tensor would otherwise land in initial_state (or step's state).
    rec, tensors, _ = ssm
    with pytest.raises(TypeError, match=r"selective_ssm: takes its inputs and parameters by port name, "
                                        r"rec\(x=\.\.\., dt=\.\.\., B=\.\.\., C=\.\.\., A=\.\.\., D=\.\.\.\); "
                                        r"got 2 positional argument\(s\)"):
        rec(tensors["x"], tensors["dt"])
    step = {n: t[:, 0] if t.dim() == 3 else t for n, t in tensors.items()}
    with pytest.raises(TypeError, match=r"selective_ssm\.step: takes its inputs and parameters by port name"):
        rec.step(step["x"], **step)


def test_states_not_a_dict(ssm):
    # FLA and Mamba take one initial-state tensor; here states go by name.
    rec, tensors, initial = ssm
    with pytest.raises(TypeError, match=r"selective_ssm: initial_state is a dict of states by name, "
                                        r"\{'s': tensor \[B, d, n\]\}; got a Tensor"):
        rec(**tensors, initial_state=initial["s"])
    step = {n: t[:, 0] if t.dim() == 3 else t for n, t in tensors.items()}
    with pytest.raises(TypeError, match=r"selective_ssm: state is a dict of states by name"):
        rec.step(**step, state=initial["s"])
