"""Packed sequences and decoding (docs/sequences.md). A packed call equals each sequence run alone
bit for bit on the CPU backend (parameter gradients: the sequences' sum, added in float64 in
sequence order); its float32 results are within 1e-5 of the float64 reference's (parameter
gradients 1e-4), and the float64 packed path passes gradcheck; bad offsets are errors. The step
path agrees with the parallel path over 10^4 steps within 1e-6 relative (float32; both run the
same arithmetic per step)."""
import pytest
import torch

import scanforge
from conftest import as_tuple, model, rel_error

LENGTHS = [5, 0, 1, 13, 2, 0]
# Parameters kept in a stable domain over 10^4 steps (decays below one), as tests/compiler's harness.
STABLE = {"A": dict(lo=-1.5, hi=-0.2), "lambda": dict(lo=0.3, hi=0.99), "nu_log": dict(lo=-1.0, hi=0.5),
          "gamma_log": dict(lo=-1.0, hi=0.3)}


def packed_call(rec, dtype, lengths, size=3, seed=0, offsets_dtype=torch.int32):
    """Random inputs [1, total, ...], parameters, initial states [N, ...] (never zeros) and offsets."""
    gen = torch.Generator().manual_seed(seed)
    sig = rec.signature

    def rand(*shape, lo=-1.0, hi=1.0):
        x = torch.rand(*shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo
        return torch.where(x.abs() < 0.05, torch.full_like(x, 0.05), x).to(dtype)

    total = sum(lengths)
    tensors = {p.name: rand(1, total, *[size] * len(p.dims)) for p in sig.inputs}
    tensors.update({p.name: rand(*[size] * len(p.dims), **STABLE.get(p.name, {})) for p in sig.params})
    initial = {s.name: rand(len(lengths), *[size] * len(s.dims)) for s in sig.states}
    offsets = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=offsets_dtype)
    return tensors, initial, offsets


def run(rec, tensors, initial, weights, final_weights, **kwargs):
    """Outputs, finals and the gradients of sum(w * outputs) + sum(fw * finals) in every leaf."""
    leaves = {n: t.detach().clone().requires_grad_() for n, t in tensors.items()}
    h0 = {n: t.detach().clone().requires_grad_() for n, t in initial.items()}
    outputs, finals = rec(initial_state=h0, output_final_state=True, **leaves, **kwargs)
    loss = sum((o.double() * w).sum() for o, w in zip(as_tuple(outputs), weights))
    (loss + sum((finals[n].double() * w).sum() for n, w in final_weights.items())).backward()
    return as_tuple(outputs), finals, {n: t.grad for n, t in leaves.items()}, {n: t.grad for n, t in h0.items()}


def loss_weights(rec, total, lengths, size=3):
    gen = torch.Generator().manual_seed(99)
    weights = [torch.rand(1, total, *[size] * len(o.dims), generator=gen, dtype=torch.float64) + 0.1
               for o in rec.signature.outputs]
    final_weights = {s.name: torch.rand(len(lengths), *[size] * len(s.dims), generator=gen, dtype=torch.float64) + 0.1
                     for s in rec.signature.states}
    return weights, final_weights


def check_packed_equals_alone(rec, lengths, offsets_dtype=torch.int32):
    tensors, initial, offsets = packed_call(rec, torch.float32, lengths, offsets_dtype=offsets_dtype)
    params = {p.name for p in rec.signature.params}
    weights, final_weights = loss_weights(rec, sum(lengths), lengths)
    outs, finals, grads, h0_grads = run(rec, tensors, initial, weights, final_weights, cu_seqlens=offsets)
    param_sums = {n: torch.zeros_like(tensors[n], dtype=torch.float64) for n in params}
    for i, length in enumerate(lengths):
        start = int(offsets[i])
        rows = {n: t[i:i + 1] for n, t in initial.items()}
        if length == 0:  # nothing runs: the states and their gradients pass through
            for n in finals:
                assert torch.equal(finals[n][i:i + 1], rows[n]), f"final {n} of empty sequence {i}"
                assert torch.equal(h0_grads[n][i:i + 1], final_weights[n][i:i + 1].float()), f"d/d{n}(0) of {i}"
            continue
        alone = {n: (t if n in params else t[:, start:start + length].contiguous()) for n, t in tensors.items()}
        w = [x[:, start:start + length] for x in weights]
        fw = {n: x[i:i + 1] for n, x in final_weights.items()}
        a_outs, a_finals, a_grads, a_h0 = run(rec, alone, rows, w, fw)
        for k, (o, a) in enumerate(zip(outs, a_outs)):
            assert torch.equal(o[:, start:start + length], a), f"output {k} of sequence {i}"
        for n in finals:
            assert torch.equal(finals[n][i:i + 1], a_finals[n]), f"final {n} of sequence {i}"
            assert torch.equal(h0_grads[n][i:i + 1], a_h0[n]), f"d/d{n}(0) of sequence {i}"
        for n in tensors:
            if n in params:
                param_sums[n] += a_grads[n].double()
            else:
                assert torch.equal(grads[n][:, start:start + length], a_grads[n]), f"d/d{n} of sequence {i}"
    for n in params:
        assert torch.equal(grads[n], param_sums[n].float()), f"d/d{n} (the sequences' sum)"


def test_packed_equals_each_sequence_alone(any_model):
    check_packed_equals_alone(any_model, LENGTHS)


def test_packed_long_sequence_and_int64_offsets():
    check_packed_equals_alone(scanforge.load(model("mingru")), [1, 100000, 0, 2], offsets_dtype=torch.int64)


def test_packed_float32_against_float64_reference(any_model):
    check_packed_float32_against_float64(any_model)


def check_packed_float32_against_float64(rec, lengths=LENGTHS):
    """A packed float32 call (outputs, finals, every gradient) within 1e-5 of the float64 reference's
    packed call; parameter gradients, sums over every step, within 1e-4."""
    weights, final_weights = loss_weights(rec, sum(lengths), lengths)
    results = {}
    for dtype in (torch.float64, torch.float32):
        tensors, initial, offsets = packed_call(rec, dtype, lengths)
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


@pytest.mark.parametrize("offsets,error,message", [
    ([1, 4, 7], ValueError, r"cu_seqlens \[3\] starts at 1, not 0"),
    ([0, 5, 3, 7], ValueError, r"cu_seqlens \[4\] decreases at entry 2 \(5 then 3\)"),
    ([0, 3, 6], ValueError, r"cu_seqlens \[3\] ends at 6, but the inputs have total = T = 7 steps"),
    ([0.0, 3.0, 7.0], TypeError, r"cu_seqlens \[3\] is Float; offsets are int32 or int64"),
    ([7], ValueError, r"cu_seqlens \[1\] must be one-dimensional with N \+ 1 >= 2 offsets"),
])
def test_bad_offsets_are_clear_errors(offsets, error, message):
    rec = scanforge.load(model("mingru"))
    tensors, _, _ = packed_call(rec, torch.float32, [3, 4])
    cu = torch.tensor(offsets)
    with pytest.raises(error, match="scanforge mingru: " + message):
        rec(**tensors, cu_seqlens=cu)


def test_packed_needs_batch_one_and_one_state_row_per_sequence():
    rec = scanforge.load(model("mingru"))
    tensors, initial, offsets = packed_call(rec, torch.float32, [3, 4])
    batched = {n: t.expand(2, -1, -1).contiguous() for n, t in tensors.items()}
    with pytest.raises(ValueError, match="packed sequences take B = 1"):
        rec(**batched, cu_seqlens=offsets)
    with pytest.raises(ValueError, match=r"initial state 'h' has shape \[3, 3\], expected \[2, 3\]"):
        rec(**tensors, cu_seqlens=offsets, initial_state={"h": torch.ones(3, 3)})


def step_through(rec, tensors, initial, steps):
    """Outputs of `steps` calls of rec.step, stacked along T, and the last state."""
    params = {p.name for p in rec.signature.params}
    state, stepped = dict(initial), []
    for t in range(steps):
        outputs, state = rec.step(state=state, **{n: (x if n in params else x[:, t]) for n, x in tensors.items()})
        stepped.append(as_tuple(outputs))
    return [torch.stack(o, dim=1) for o in zip(*stepped)], state


@pytest.mark.parametrize("name", ["mingru", "selective_ssm", "linear_attention"])
def test_step_agrees_with_the_parallel_path(name):
    rec = scanforge.load(model(name))
    steps = 10000
    tensors, initial, _ = packed_call(rec, torch.float32, [steps], seed=5)
    want, want_finals = rec(initial_state=initial, output_final_state=True, **tensors)
    got, finals = step_through(rec, tensors, initial, steps)
    for g, w in zip(got, as_tuple(want)):
        assert rel_error(g, w) <= 1e-6
    for n in finals:
        assert rel_error(finals[n], want_finals[n]) <= 1e-6


def test_step_float64_is_the_reference_and_none_is_zero_state():
    rec = scanforge.load(model("selective_ssm"))
    tensors, _, _ = packed_call(rec, torch.float64, [20], seed=6)
    tensors = {n: t.expand(2, *t.shape[1:]).contiguous() if t.dim() == 3 else t for n, t in tensors.items()}
    want = rec(**tensors)
    got, _ = step_through(rec, tensors, {}, 20)
    assert rel_error(got[0], want) <= 1e-12


def test_step_errors(tmp_path):
    source = open(model("mingru")).read().replace("recurrence mingru", "reverse recurrence mingru")
    path = tmp_path / "reverse_mingru.scan"
    path.write_text(source)
    rec = scanforge.load(str(path))
    x = torch.rand(2, 3) + 0.1
    with pytest.raises(ValueError, match="'mingru' is a reverse recurrence: it runs from the last step to the first"):
        rec.step(k=x, u=x)
    rec = scanforge.load(model("mingru"))
    with pytest.raises(ValueError, match=r"a step's inputs are \[B, dims...\] \(no time axis\)"):
        rec.step(k=x[:, None], u=x[:, None])
    with pytest.raises(TypeError, match="missing input 'u' of shape \\[B, d\\]"):
        rec.step(k=x)


def test_packed_float64_gradcheck():
    """The float64 packed path (the reference per sequence) against finite differences, through
    the initial states of every sequence, an empty one included."""
    rec = scanforge.load(model("selective_ssm"))
    tensors, initial, offsets = packed_call(rec, torch.float64, [2, 0, 1, 3], size=2, seed=8)
    names = list(tensors) + list(initial)
    leaves = [t.clone().requires_grad_() for t in list(tensors.values()) + list(initial.values())]

    def f(*values):
        args = dict(zip(names, values))
        h0 = {n: args.pop(n) for n in initial}
        outputs, finals = rec(initial_state=h0, output_final_state=True, cu_seqlens=offsets, **args)
        return as_tuple(outputs) + tuple(finals.values())

    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-7, rtol=1e-6)
