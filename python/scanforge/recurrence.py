"""A loaded recurrence: ports by name in, outputs (and final states) out, through torch.ops.scanforge."""
import functools
import json
import os

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

    def __repr__(self):
        def ports(ps):
            return ", ".join(map(repr, ps))
        params = f"; {ports(self.params)}" if self.params else ""
        return (f"{self.name}({ports(self.inputs)}{params}) -> {ports(self.outputs)}"
                f" [states: {ports(self.states) or 'none'}{', reverse' if self.reverse else ''}]")


class Recurrence:
    """Call with every input and parameter by port name. Returns the output tensor, or a tuple of
    outputs in declaration order; with output_final_state=True, (outputs, {state: final})."""

    def __init__(self, key):
        self._key = key
        self.signature = Signature(json.loads(torch.ops.scanforge.signature(key)))

    def __repr__(self):
        return f"scanforge.Recurrence({self.signature!r})"

    def __call__(self, initial_state=None, output_final_state=False, **tensors):
        sig = self.signature
        inputs = [self._take(tensors, p, "input", "[B, T, ") for p in sig.inputs]
        params = [self._take(tensors, p, "parameter", "[") for p in sig.params]
        if tensors:
            known = ", ".join(p.name for p in sig.inputs + sig.params)
            raise TypeError(f"scanforge {sig.name}: unknown port(s) {', '.join(map(repr, tensors))}; "
                            f"its inputs and parameters are {known}")
        initial = dict(initial_state or {})
        results = torch.ops.scanforge.scan(self._key, inputs, params, list(initial), list(initial.values()))
        outputs = results[:len(sig.outputs)]
        outputs = outputs[0] if len(outputs) == 1 else tuple(outputs)
        if not output_final_state:
            return outputs
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


@functools.lru_cache(maxsize=None)
def _load(path, recurrence, mtime):
    return Recurrence(torch.ops.scanforge.load(path, recurrence))


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
