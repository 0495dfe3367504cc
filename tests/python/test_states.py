"""Initial and final states: the final state is the state after the last step, a sequence run in
two halves (the second starting from the first's final state) equals the whole run, and the
gradients flow through that chaining to the first half's inputs and the initial state."""
import pytest
import torch

import scanforge
from conftest import as_tuple, model, random_call, rel_error


@pytest.mark.parametrize("dtype,bound", [(torch.float64, 1e-12), (torch.float32, 1e-5)], ids=["float64", "float32"])
def test_two_halves_equal_the_whole(any_model, dtype, bound):
    rec = any_model
    tensors, initial = random_call(rec, dtype, batch=2, steps=12, size=3, seed=3)
    if rec.signature.reverse:
        pytest.skip("a reverse recurrence runs from the end: its halves chain the other way")
    params = {p.name for p in rec.signature.params}

    def leaves():
        return ({n: t.clone().requires_grad_() for n, t in tensors.items()},
                {n: t.clone().requires_grad_() for n, t in initial.items()})

    whole_x, whole_h0 = leaves()
    whole, whole_finals = rec(initial_state=whole_h0, output_final_state=True, **whole_x)

    half_x, half_h0 = leaves()
    first = {n: (t if n in params else t[:, :6].contiguous()) for n, t in half_x.items()}
    second = {n: (t if n in params else t[:, 6:].contiguous()) for n, t in half_x.items()}
    out1, mid = rec(initial_state=half_h0, output_final_state=True, **first)
    out2, finals = rec(initial_state=mid, output_final_state=True, **second)
    halves = tuple(torch.cat([a, b], dim=1) for a, b in zip(as_tuple(out1), as_tuple(out2)))

    for a, b in zip(halves, as_tuple(whole)):
        assert rel_error(a, b) <= bound
    for n in finals:
        assert rel_error(finals[n], whole_finals[n]) <= bound

    # The same loss of both runs: random weights on the outputs, squares of the final states.
    weights = [torch.rand(o.shape, generator=torch.Generator().manual_seed(i), dtype=torch.float64)
               for i, o in enumerate(as_tuple(whole))]
    for outs, fins in ((whole, whole_finals), (halves, finals)):
        loss = sum((o.double() * w).sum() for o, w in zip(as_tuple(outs), weights))
        (loss + sum(f.double().pow(2).sum() for f in fins.values())).backward()
    # Parameter gradients of the halves are two partial sums: a few more roundings.
    for n in tensors:
        assert rel_error(half_x[n].grad, whole_x[n].grad) <= bound * 10, f"d/d{n}"
    for n in initial:
        assert rel_error(half_h0[n].grad, whole_h0[n].grad) <= bound * 10, f"d/d{n}(0)"


def test_final_state_of_mingru_is_its_last_output():
    rec = scanforge.load(model("mingru"))
    tensors, initial = random_call(rec, torch.float32, steps=9)
    h, finals = rec(initial_state=initial, output_final_state=True, **tensors)
    assert torch.equal(finals["h"], h[:, -1])
