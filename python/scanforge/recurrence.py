"""A loaded recurrence: ports by name in, outputs (and final states) out, through torch.ops.scanforge."""
import functools
import json
import os
import warnings
from collections.abc import Mapping

import torch


class Port:
    """One port of a recurrence: its name, its dimensions (declared order) and element type."""

    def __init__(self, desc):
        self.name = desc["name"]
        self.dims = tuple(desc["dims"])
        self.dtype = desc["dtype"]

    def __repr__(self):
        return f"{self.name}[{', '.join(self.dims)}]: {self.dtype}"


class Signature:
    """The ports of a recurrence, as the compiler's Ports analysis describes them. Per-step tensors
    (inputs, outputs) are [B, T, dims...], parameters [dims...], states [B, dims...]."""

    def __init__(self, desc):
        self.name = desc["name"]
        self.reverse = desc["reverse"]
        self.inputs, self.params, self.states, self.outputs = (
            [Port(p) for p in desc[kind]] for kind in ("inputs", "params", "states", "outputs"))

    def sizes(self, inputs, params):
        """B, T and every dimension's size, from per-step inputs [B, T, ...] and parameters in port
        order (the scan op checks that they agree)."""
        sizes = {"B": inputs[0].shape[0], "T": inputs[0].shape[1]}
        for port, t in zip(self.inputs, inputs):
            sizes.update(zip(port.dims, t.shape[2:]))
        for port, t in zip(self.params, params):
            sizes.update(zip(port.dims, t.shape))
        return sizes

    def __repr__(self):
        def ports(ps):
            return ", ".join(map(repr, ps))
        params = f"; {ports(self.params)}" if self.params else ""
        return (f"{self.name}({ports(self.inputs)}{params}) -> {ports(self.outputs)}"
                f" [states: {ports(self.states) or 'none'}{', reverse' if self.reverse else ''}]")


class Recurrence:
    """Call with every input and parameter by port name. Returns the output tensor, or a tuple of
    outputs in declaration order; with output_final_state=True, (outputs, {state: final}).

    Packed sequences (docs/sequences.md): with cu_seqlens (int32/int64 offsets, N + 1 of them),
    inputs are [1, total, dims...] and initial and final states [N, dims...], one row per sequence.
    Context parallelism (docs/context-parallel.md): with group (a torch.distributed process group),
    each rank passes its contiguous slice of the sequence and gets its slice of the result.
    Decoding: step()."""

    def __init__(self, key, source=None):
        self._key = key
        self._source = source  # (path, recurrence) of a .scan file; None for a kernel package
        self._stepped = False  # a CPU step has run (its parameter check given)
        self.signature = Signature(json.loads(torch.ops.scanforge.signature(key)))

    def __repr__(self):
        return f"scanforge.Recurrence({self.signature!r})"

    def __call__(self, *args, initial_state=None, output_final_state=False, cu_seqlens=None, group=None, **tensors):
        self._by_name(args, "")
        inputs, params = self._ports(tensors, "[B, T, ")
        initial = self._states(initial_state, "initial_state")
        if group is not None:
            if cu_seqlens is not None:
                raise ValueError(f"scanforge {self.signature.name}: cu_seqlens and group together: context "
                                 "parallelism splits one batch of sequences, not packed ones")
            from scanforge.context_parallel import context_parallel_scan
            results = context_parallel_scan(self, group, inputs, params, initial)
        else:
            results = torch.ops.scanforge.scan(self._key, inputs, params, list(initial), list(initial.values()),
                                               cu_seqlens)
        _give_warnings()  # the parameters' check (docs/dsl.md), on any device
        outputs, finals = self._results(results)
        return (outputs, finals) if output_final_state else outputs

    def step(self, *args, state=None, **tensors):
        """Decoding: one time step. Inputs [B, dims...] (no time axis) and parameters by port name;
        `state` the states by name, [B, dims...] (None or a missing state: zeros). Returns
        (outputs, state): outputs as a call returns them, [B, dims...], and every state after the
        step. On CPU tensors the compiled programs and their buffers are reused from one step to
        the next; elsewhere a step is a one-step call."""
        sig = self.signature
        self._by_name(args, ".step")
        inputs, params = self._ports(tensors, "[B, ")
        state = self._states(state, "state")
        if inputs[0].device.type == "cpu":
            results = torch.ops.scanforge.scan_step(self._key, inputs, params, list(state), list(state.values()))
            # The runtime checks the parameters at a recurrence's first step (and after a change of
            # shapes, whose warning the next call gives); draining every step would cost a call.
            if not self._stepped:
                self._stepped = True
                _give_warnings()
        elif sig.reverse:
            raise ValueError(f"scanforge {sig.name}.step: '{sig.name}' is a reverse recurrence: it runs from the last "
                             "step to the first, so it cannot be decoded one step at a time")
        else:
            results = torch.ops.scanforge.scan(self._key, [t.unsqueeze(1) for t in inputs], params, list(state),
                                               list(state.values()))
            results = [r.squeeze(1) for r in results[:len(sig.outputs)]] + list(results[len(sig.outputs):])
        return self._results(results)

    def _by_name(self, args, method):
        """Ports go by name: a positional tensor would otherwise land in initial_state (or state)."""
        if args:
            sig = self.signature
            example = ", ".join(f"{p.name}=..." for p in sig.inputs + sig.params)
            raise TypeError(f"scanforge {sig.name}{method}: takes its inputs and parameters by port name, "
                            f"rec{method}({example}); got {len(args)} positional argument(s)")

    def _states(self, value, what):
        """States by name (a dict, or None for zeros)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            sig = self.signature
            example = ", ".join(f"'{s.name}': tensor [B, {', '.join(s.dims)}]" for s in sig.states)
            raise TypeError(f"scanforge {sig.name}: {what} is a dict of states by name, {{{example}}}; "
                            f"got a {type(value).__name__}")
        return dict(value)

    def _ports(self, tensors, lead):
        sig = self.signature
        inputs = [self._take(tensors, p, "input", lead) for p in sig.inputs]
        params = [self._take(tensors, p, "parameter", "[") for p in sig.params]
        if tensors:
            known = ", ".join(p.name for p in sig.inputs + sig.params)
            raise TypeError(f"scanforge {sig.name}: unknown port(s) {', '.join(map(repr, tensors))}; "
                            f"its inputs and parameters are {known}")
        return inputs, params

    def _results(self, results):
        """The outputs (one tensor, or a tuple in declaration order) and the states by name."""
        sig = self.signature
        outputs = results[:len(sig.outputs)]
        outputs = outputs[0] if len(outputs) == 1 else tuple(outputs)
        return outputs, {s.name: f for s, f in zip(sig.states, results[len(sig.outputs):])}

    def _take(self, tensors, port, role, lead):
        if port.name not in tensors:
            raise TypeError(f"scanforge {self.signature.name}: missing {role} '{port.name}' "
                            f"of shape {lead}{', '.join(port.dims)}]")
        value = tensors.pop(port.name)
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"scanforge {self.signature.name}: {role} '{port.name}' is a {type(value).__name__}, "
                            "not a torch.Tensor")
        return value


    def _transition_key(self):
        """The key of this recurrence's slice transition (compiled on first use), for context
        parallelism."""
        if self._source is None:
            raise ValueError(f"scanforge {self.signature.name}: context parallelism needs the slice transition, "
                             "which the compiler makes: load the .scan file with scanforge.load (a kernel "
                             "package has no transition)")
        return torch.ops.scanforge.load(*self._source, True)


def _give_warnings():
    """The runtime's warnings of the call just made (a decay above 1, docs/dsl.md) as UserWarnings
    at the caller's line."""
    for message in torch.ops.scanforge.take_warnings():
        warnings.warn(message, UserWarning, stacklevel=3)


@functools.lru_cache(maxsize=None)
def _load(path, recurrence, mtime):
    return Recurrence(torch.ops.scanforge.load(path, recurrence), (path, recurrence))


def load(path, recurrence=None):
    """Compiles the .scan file at `path` (once; cached while the file is unchanged) and returns its
    recurrence `recurrence` (None: the file's only one)."""
    path = os.path.abspath(path)
    return _load(path, recurrence or "", os.stat(path).st_mtime_ns if os.path.exists(path) else 0)


def load_package(directory, recurrence=None):
    """Serves recurrence `recurrence` (None: the package's only forward one) of the CUDA kernel
    package in `directory` (written by `scanc --emit-package`, docs/cuda.md): needs no compiler, and
    runs on CUDA tensors."""
    return Recurrence(torch.ops.scanforge.load_package(os.path.abspath(directory), recurrence or ""))
