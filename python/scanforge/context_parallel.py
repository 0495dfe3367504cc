"""Context parallelism: one batch of long sequences split over the ranks of a torch.distributed
group, each rank holding a contiguous slice of the time axis (docs/context-parallel.md).

A slice maps the state entering it to the state leaving it affinely, h_end = A * h_start + B, with
A the product of the coefficients a over the slice (the compiler's slice transition) and B the
slice's final state from zeros. Ranks exchange their (A, B) once (an all_gather), each folds its
predecessors' pairs into its own start state, and runs its slice from there. The backward carries
the gradient of the start states the other way with the same A. The chain runs from rank 0 to the
last rank, or from the last to rank 0 for a reverse recurrence.
"""
import torch
import torch.distributed as dist


def context_parallel_scan(rec, group, inputs, params, initial):
    """The outputs and final states of `rec` on this rank's slice, as a list like the scan op's."""
    sig = rec.signature
    unknown = set(initial) - {s.name for s in sig.states}
    if unknown:
        raise ValueError(f"scanforge {sig.name}: initial_state has no state {sorted(unknown)}; its states are "
                         f"{[s.name for s in sig.states]}")
    names = list(initial)
    return _ContextParallelScan.apply(rec, group, len(inputs), len(params), names,
                                      *inputs, *params, *initial.values())


def _position(sig, group):
    """This rank's place in the chain, and the chain's rank at each place."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    order = list(range(world))
    if sig.reverse:
        order.reverse()
    return order.index(rank), order


def _gather(group, order, tensors):
    """Every rank's `tensors` (flattened into one message), by place in the chain."""
    flat = torch.cat([t.reshape(-1) for t in tensors])
    parts = [torch.empty_like(flat) for _ in order]
    dist.all_gather(parts, flat, group=group)
    out = []
    for rank in order:
        pieces, offset = [], 0
        for t in tensors:
            pieces.append(parts[rank][offset:offset + t.numel()].view_as(t))
            offset += t.numel()
        out.append(pieces)
    return out


class _ContextParallelScan(torch.autograd.Function):

    @staticmethod
    def forward(ctx, rec, group, n_inputs, n_params, names, *tensors):
        sig = rec.signature
        inputs, params = list(tensors[:n_inputs]), list(tensors[n_inputs:n_inputs + n_params])
        given = dict(zip(names, tensors[n_inputs + n_params:]))
        place, order = _position(sig, group)
        scan = torch.ops.scanforge.scan
        states = [s.name for s in sig.states]
        n_out, n = len(sig.outputs), len(states)
        zeros = [_state_like(sig, s, inputs, params) for s in sig.states]
        if place == 0:
            # The chain's start runs its slice from the real initial state and sends its end state
            # as B (with A = 0: nobody composes past it).
            results = scan(rec._key, inputs, params, list(given), list(given.values()))
            message = zeros + list(results[n_out:])
        elif place == len(order) - 1:
            message = zeros + zeros  # nobody needs the last place's pair
        else:
            # B: the slice from zeros; A: the slice transition from ones.
            b = scan(rec._key, inputs, params, [], [])[n_out:]
            a = scan(rec._transition_key(), inputs, params, states, [torch.ones_like(z) for z in zeros])
            message = list(a) + list(b)
        pairs = _gather(group, order, message)
        if place == 0:
            start = [given[s] if s in given else z for s, z in zip(states, zeros)]
        else:
            start = [b.clone() for b in pairs[0][n:]]
            for q in range(1, place):
                a, b = pairs[q][:n], pairs[q][n:]
                start = [ai * h + bi for ai, h, bi in zip(a, start, b)]
            results = scan(rec._key, inputs, params, states, start)
        # The coefficients of the later places carry the backward's gradient to this one.
        later = [t for q in range(place + 1, len(order)) for t in pairs[q][:n]]
        ctx.save_for_backward(*inputs, *params, *start, *later)
        ctx.meta = (rec, group, n_inputs, n_params, names, place, order)
        return tuple(results)

    @staticmethod
    def backward(ctx, *grads):
        rec, group, n_inputs, n_params, names, place, order = ctx.meta
        sig = rec.signature
        saved = ctx.saved_tensors
        n = len(sig.states)
        inputs, params = list(saved[:n_inputs]), list(saved[n_inputs:n_inputs + n_params])
        start = list(saved[n_inputs + n_params:n_inputs + n_params + n])
        later = saved[n_inputs + n_params + n:]
        states = [s.name for s in sig.states]
        n_out = len(sig.outputs)
        output_grads = [g.contiguous() if g is not None else _zeros_output(sig, sig.outputs[i], inputs, params)
                        for i, g in enumerate(grads[:n_out])]
        final_grads = [g.contiguous() if g is not None else torch.zeros_like(h)
                       for g, h in zip(grads[n_out:], start)]
        backward = torch.ops.scanforge.scan_backward
        last = place == len(order) - 1
        # G: the gradient of this slice's start state from its own outputs and final state; the
        # chain's start needs nobody's and sends zeros.
        local = None
        if place > 0:
            local = backward(rec._key, inputs, params, states, start, output_grads, final_grads)
            message = list(local[n_inputs + n_params:])
        else:
            message = [torch.zeros_like(h) for h in start]
        gathered = _gather(group, order, message)
        if last and local is not None:
            result = local  # nothing comes back from later slices
        else:
            # The gradient reaching this slice's end from every later slice: e_q = G_q + A_q * e_{q+1}.
            carried = [torch.zeros_like(h) for h in start]
            for q in range(len(order) - 1, place, -1):
                a = later[(q - place - 1) * n:(q - place) * n]
                carried = [g + ai * e for g, ai, e in zip(gathered[q], a, carried)]
            final_grads = [f + e for f, e in zip(final_grads, carried)]
            result = backward(rec._key, inputs, params, states, start, output_grads, final_grads)
        grad_inputs = list(result[:n_inputs + n_params])
        start_grads = dict(zip(states, result[n_inputs + n_params:]))
        grad_initial = [start_grads[name] if place == 0 else None for name in names]
        return (None, None, None, None, None, *grad_inputs, *grad_initial)


def _state_like(sig, state, inputs, params):
    """Zeros shaped and typed as `state` ([B, dims...]; float32 unless the call is float64)."""
    n = sig.sizes(inputs, params)
    dtype = torch.float64 if inputs[0].dtype == torch.float64 else torch.float32
    return torch.zeros(n["B"], *[n[d] for d in state.dims], dtype=dtype, device=inputs[0].device)


def _zeros_output(sig, port, inputs, params):
    n = sig.sizes(inputs, params)
    return torch.zeros(n["B"], n["T"], *[n[d] for d in port.dims], dtype=inputs[0].dtype, device=inputs[0].device)
