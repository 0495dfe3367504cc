"""The CUDA dispatch code (python/csrc/Device.cpp: buffers by name, plans, checkpoints and
workspaces, forward and the recomputing backward) on CPU tensors through the concurrent CUDA
emulator, behind the test-only switch (tests/python/emulation): the generated kernels against the
float64 reference interpreter, and a kernel package served by load_package. Bounds as the CUDA
tests' (tests/cuda/ReferenceCheck.h): 1e-5 for float32, 1e-2 for bfloat16; parameter gradients,
summed over B and T, 1e-4 in float32."""
import os

import pytest
import torch

import scanforge
from conftest import as_tuple, check_against_float64, model, outputs_and_grads, random_call, rel_error
from test_sequences import check_packed_float32_against_float64, packed_call, step_through

EMULATION = os.environ.get("SCANFORGE_TORCH_EMULATION")
PACKAGE = os.environ.get("SCANFORGE_MODELS_PACKAGE")
pytestmark = pytest.mark.skipif(not EMULATION, reason="SCANFORGE_TORCH_EMULATION is unset (ctest sets it)")


@pytest.fixture
def emulated():
    torch.ops.load_library(EMULATION)  # once per process: loading again is a no-op
    torch.ops.scanforge_testing.emulate_cuda(True)
    yield
    torch.ops.scanforge_testing.emulate_cuda(False)


# Random parameters: some of the selective SSM's A are above 0, which the dispatch's parameter check
# reports (test_warnings.py tests that warning); over 9 steps the states stay small.
@pytest.mark.filterwarnings(r"ignore:selective_ssm\.forward. parameter A")
@pytest.mark.parametrize("dtype,bound,param_bound", [(torch.float32, 1e-5, 1e-4), (torch.bfloat16, 1e-2, 1e-2)],
                         ids=["float32", "bfloat16"])
def test_generated_kernels_match_float64(emulated, any_model, dtype, bound, param_bound):
    check_against_float64(any_model, dtype, bound, param_bound, batch=2, steps=9, size=3)


def test_kernel_package(emulated):
    if not PACKAGE:
        pytest.skip("SCANFORGE_MODELS_PACKAGE is unset (ctest sets it)")
    rec = scanforge.load_package(PACKAGE, "minlstm")
    assert repr(rec.signature) == repr(scanforge.load(model("minlstm")).signature)
    check_against_float64(rec, torch.float32, 1e-5, 1e-4, batch=2, steps=9, size=3,
                          want_rec=scanforge.load(model("minlstm")))


def test_package_without_the_switch_names_the_problem():
    if not PACKAGE:
        pytest.skip("SCANFORGE_MODELS_PACKAGE is unset (ctest sets it)")
    rec = scanforge.load_package(PACKAGE, "mingru")
    tensors, _ = random_call(rec, torch.float32)
    with pytest.raises(ValueError, match="mingru: a kernel package runs on CUDA tensors only"):
        rec(**tensors)
    with pytest.raises(ValueError, match="no recurrence 'nope'; its forward recurrences: .*mingru"):
        scanforge.load_package(PACKAGE, "nope")


def test_packed_sequences_one_launch_sequence_each(emulated, any_model):
    """Packed calls on the CUDA dispatch (one launch sequence per sequence, lengths 0 and 1 among
    them) against the float64 reference's packed call."""
    check_packed_float32_against_float64(any_model)


def test_deterministic_algorithms_give_the_same_gradient_bits(emulated):
    """torch.use_deterministic_algorithms(True): the selective SSM's B.grad and C.grad (sums over d,
    from one row per warp added in a fixed order) have the same bits on every call, while the
    emulator interleaves the warps in a new order at every launch; off (PyTorch's default), they are
    added atomically and still match float64."""
    rec = scanforge.load(model("selective_ssm"))
    gen = torch.Generator().manual_seed(5)
    batch, steps, d, n = 2, 9, 70, 4  # three warps of channels, the last one partial

    def rand(*shape, low=-1.0):
        return torch.rand(*shape, generator=gen, dtype=torch.float64) * (1 - low) + low

    tensors = {"x": rand(batch, steps, d), "dt": rand(batch, steps, d), "B": rand(batch, steps, n),
               "C": rand(batch, steps, n), "A": rand(d, n, low=-1.0) * 0.5 - 0.5, "D": rand(d)}

    def grads(dtype):
        leaves = {k: t.detach().to(dtype).clone().requires_grad_() for k, t in tensors.items()}
        y = rec(**leaves)
        (y.double() * torch.linspace(-1, 1, y.numel(), dtype=torch.float64).view_as(y)).sum().backward()
        return {k: t.grad for k, t in leaves.items()}

    want = grads(torch.float64)
    was = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        runs = [grads(torch.float32) for _ in range(3)]
    finally:
        torch.use_deterministic_algorithms(was)
    atomic = grads(torch.float32)
    for name in ("B", "C"):
        for other in runs[1:]:
            assert torch.equal(other[name], runs[0][name]), name
        assert rel_error(runs[0][name], want[name]) <= 1e-5, name
        assert rel_error(atomic[name], want[name]) <= 1e-5, name


def test_step_on_the_cuda_dispatch(emulated):
    """Decoding on the CUDA dispatch (a one-step call) against the float64 reference's steps."""
    rec = scanforge.load(model("selective_ssm"))
    results = {}
    for dtype in (torch.float64, torch.float32):
        tensors, initial, _ = packed_call(rec, dtype, [7], seed=4)
        results[dtype] = step_through(rec, tensors, initial, 7)
    (got, finals), (want, want_finals) = results[torch.float32], results[torch.float64]
    for g, w in zip(got, want):
        assert rel_error(g, w) <= 1e-5
    for n in finals:
        assert rel_error(finals[n], want_finals[n]) <= 1e-5


SATURATION = {"pm100": (100.0, []), "pm1e4": (1e4, []), "inf": (1.0, [float("inf"), float("-inf")]),
              "nan": (1.0, [float("nan")])}


@pytest.mark.parametrize("scenario", SATURATION, ids=list(SATURATION))
def test_saturated_and_non_finite_inputs_on_the_cuda_dispatch(emulated, any_model, scenario):
    """The generated kernels (emulated) at pre-activations of +-100 and +-1e4 and with inf/NaN inputs,
    as the CPU backend's SaturationTest: finite wherever the float64 reference is finite and within
    float32's range, non-finite where it is NaN (NaN itself when a NaN input caused it); where float64
    is infinite or beyond float32's range (a state grown past 3.4e38 overflows in any float32
    computation) they are not compared."""
    rec = any_model
    scale, specials = SATURATION[scenario]
    tensors, initial = random_call(rec, torch.float32, batch=2, steps=9, size=3, seed=17)
    # Parameters non-positive: a decay above 1 (the SSM's exp(delta * A) with A > 0) grows the state
    # past float32's range in any float32 computation, gradients' intermediates included.
    for p in rec.signature.params:
        tensors[p.name] = -tensors[p.name].abs()
    inputs = {p.name for p in rec.signature.inputs}
    for name in inputs:
        flat = tensors[name].view(-1)
        flat *= scale
        for i, value in enumerate(specials):
            flat[i] = value
    as64 = {n: t.double() for n, t in tensors.items()}, {n: t.double() for n, t in initial.items()}
    weights = [torch.rand(o.shape, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
               for o in as_tuple(rec(**as64[0]))]
    got = outputs_and_grads(rec, tensors, initial, weights)
    want = outputs_and_grads(rec, *as64, weights)
    compared = 0
    for what, value in got.items():
        g, w = value.double().reshape(-1), want[what].reshape(-1)
        keep = ~(w.abs() > torch.finfo(torch.float32).max)  # NaN is kept
        compared += int(keep.sum())
        finite = torch.isfinite(w) & keep
        bad = finite & ~torch.isfinite(g)
        assert not bad.any(), f"{rec.signature.name} {what}: not finite where float64 is, at {bad.nonzero().view(-1)[:5].tolist()}"
        nan = torch.isnan(w)
        wrong = nan & (~torch.isnan(g) if scenario == "nan" else torch.isfinite(g))
        assert not wrong.any(), f"{rec.signature.name} {what}: float64 is NaN, the kernels {g[wrong][:5].tolist()}"
    assert compared > 0


def test_exp_clamps_its_argument(emulated, tmp_path):
    """The language's exp clamps its argument to [-87.34, 88.72] (docs/dsl.md): the kernels' exp(100)
    is exp(88.72), finite, not float32's inf."""
    path = tmp_path / "exp_clamp.scan"
    path.write_text("recurrence exp_clamp(x[d]) -> h[d] {\n  h = 0.5 * h + exp(x) * 1e-30\n}\n")
    got = scanforge.load(str(path))(x=torch.full((1, 3, 4), 100.0))
    b = torch.exp(torch.tensor(88.72283172607421875, dtype=torch.float64)) * 1e-30
    want = torch.tensor([b, 1.5 * b, 1.75 * b], dtype=torch.float64).view(1, 3, 1).expand(1, 3, 4)
    assert rel_error(got, want) <= 1e-6, got
