"""Fake (meta) implementations of the ops for torch.compile, where torch has
torch.library.register_fake (>= 2.4): the output shapes from the signature, so that
torch.compile(fullgraph=True) traces a model that calls the ops without running them."""
import json

import torch


def _sizes(sig, inputs, params):
    """B, T and every dimension's size, from the inputs and parameters (the op checks them)."""
    sizes = {"B": inputs[0].shape[0], "T": inputs[0].shape[1]}
    for port, t in zip(sig["inputs"], inputs):
        sizes.update(zip(port["dims"], t.shape[2:]))
    for port, t in zip(sig["params"], params):
        sizes.update(zip(port["dims"], t.shape))
    return sizes


def register():
    if not hasattr(torch.library, "register_fake"):
        return

    @torch.library.register_fake("scanforge::scan")
    def _scan(key, inputs, params, initial_names, initial):
        sig = json.loads(torch.ops.scanforge.signature(key))
        n = _sizes(sig, inputs, params)
        outputs = [inputs[0].new_empty(n["B"], n["T"], *[n[d] for d in p["dims"]]) for p in sig["outputs"]]
        return outputs + [inputs[0].new_empty(n["B"], *[n[d] for d in s["dims"]]) for s in sig["states"]]

    @torch.library.register_fake("scanforge::scan_backward")
    def _scan_backward(key, inputs, params, initial_names, initial, output_grads, final_grads):
        return [torch.empty_like(t) for t in list(inputs) + list(params) + list(initial)]
