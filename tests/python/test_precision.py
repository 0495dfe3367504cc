"""float32 and bfloat16 calls (the Halide backend) against float64 calls (the reference
interpreter) on the same values, outputs and gradients. Bounds (relative error of the norm):
float32 computes in f32 throughout, 1e-5; its parameter gradients are sums over B * T = 111
products that partly cancel, 1e-4. bfloat16 calls round their outputs and gradients to bf16
(8 bits of mantissa, 2^-9 relative per element), compared on bf16-representable inputs: 1e-2."""
import pytest
import torch

from conftest import as_tuple, random_call, rel_error

BOUNDS = {torch.float32: 1e-5, torch.bfloat16: 1e-2}
PARAM_GRAD_BOUNDS = {torch.float32: 1e-4, torch.bfloat16: 1e-2}


def run(rec, tensors, initial, weights):
    """Outputs, finals and the gradients of sum(weights * outputs) in every leaf."""
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_low_precision_matches_float64(any_model, dtype):
    rec = any_model
    tensors, initial = random_call(rec, dtype, batch=3, steps=37, size=4, seed=7)
    gen = torch.Generator().manual_seed(8)
    outputs = as_tuple(rec(**{n: t.double() for n, t in tensors.items()}))
    weights = [torch.rand(o.shape, generator=gen, dtype=torch.float64) for o in outputs]
    params = {p.name for p in rec.signature.params}
    got = run(rec, tensors, initial, weights)
    want = run(rec, {n: t.double() for n, t in tensors.items()}, {n: t.double() for n, t in initial.items()}, weights)
    for what, value in got.items():
        assert value.dtype == dtype, what
        err = rel_error(value, want[what])
        bound = (PARAM_GRAD_BOUNDS if what[3:] in params else BOUNDS)[dtype]
        assert err <= bound, f"{rec.signature.name} {what}: relative error {err:.2e} > {bound:.0e}"
