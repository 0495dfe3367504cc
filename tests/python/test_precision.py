"""float32 and bfloat16 calls (the Halide backend) against float64 calls (the reference
interpreter) on the same values, outputs and gradients. Bounds (relative error of the norm):
float32 computes in f32 throughout, 1e-5; its parameter gradients are sums over B * T = 111
products that partly cancel, 1e-4. bfloat16 calls round their outputs and gradients to bf16
(8 bits of mantissa, 2^-9 relative per element), compared on bf16-representable inputs: 1e-2."""
import pytest
import torch

from conftest import check_against_float64

BOUNDS = {torch.float32: 1e-5, torch.bfloat16: 1e-2}
PARAM_GRAD_BOUNDS = {torch.float32: 1e-4, torch.bfloat16: 1e-2}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_low_precision_matches_float64(any_model, dtype):
    check_against_float64(any_model, dtype, BOUNDS[dtype], PARAM_GRAD_BOUNDS[dtype], batch=3, steps=37, size=4)
