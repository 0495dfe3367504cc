"""The CUDA dispatch code (python/csrc/Device.cpp: buffers by name, plans, checkpoints and
workspaces, forward and the recomputing backward) on CPU tensors through the concurrent CUDA
emulator, behind the test-only switch (tests/python/emulation): the generated kernels against the
float64 reference interpreter, and a kernel package served by load_package. Bounds as the CUDA
tests' (tests/cuda/ReferenceCheck.h): 1e-5 for float32, 1e-2 for bfloat16; parameter gradients,
summed over B and T with atomics in any order, 1e-4 in float32."""
import os

import pytest
import torch

import scanforge
from conftest import check_against_float64, model, random_call, rel_error
from test_sequences import LENGTHS, loss_weights, packed_call, run, step_through

EMULATION = os.environ.get("SCANFORGE_TORCH_EMULATION")
PACKAGE = os.environ.get("SCANFORGE_MODELS_PACKAGE")
pytestmark = pytest.mark.skipif(not EMULATION, reason="SCANFORGE_TORCH_EMULATION is unset (ctest sets it)")


@pytest.fixture
def emulated():
    torch.ops.load_library(EMULATION)  # once per process: loading again is a no-op
    torch.ops.scanforge_testing.emulate_cuda(True)
    yield
    torch.ops.scanforge_testing.emulate_cuda(False)


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
    rec = any_model
    weights, final_weights = loss_weights(rec, sum(LENGTHS), LENGTHS)
    results = {}
    for dtype in (torch.float64, torch.float32):
        tensors, initial, offsets = packed_call(rec, dtype, LENGTHS)
        results[dtype] = run(rec, tensors, initial, weights, final_weights, cu_seqlens=offsets)
    params = {p.name for p in rec.signature.params}
    (outs, finals, grads, h0), (w_outs, w_finals, w_grads, w_h0) = results[torch.float32], results[torch.float64]
    for o, w in zip(outs, w_outs):
        assert rel_error(o, w) <= 1e-5
    for n in finals:
        assert rel_error(finals[n], w_finals[n]) <= 1e-5
        assert rel_error(h0[n], w_h0[n]) <= 1e-5
    for n in grads:
        assert rel_error(grads[n], w_grads[n]) <= (1e-4 if n in params else 1e-5), f"d/d{n}"


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
