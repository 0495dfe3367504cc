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
from conftest import check_against_float64, model, random_call

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
