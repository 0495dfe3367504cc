"""Fake (meta) implementations of the ops for torch.compile, where torch has
torch.library.register_fake (>= 2.4): the output shapes from the signature, so that
torch.compile(fullgraph=True) traces a model that calls the ops without running them."""
import json

import torch

from scanforge.recurrence import Signature


def register():
    if not hasattr(torch.library, "register_fake"):
        return

    @torch.library.register_fake("scanforge::scan")
    def _scan(key, inputs, params, initial_names, initial, cu_seqlens=None):
        sig = json.loads(torch.ops.scanforge.signature(key))
        n = Signature(sig).sizes(inputs, params)
        rows = n["B"] if cu_seqlens is None else cu_seqlens.shape[0] - 1  # packed: one state row per sequence
        outputs = [inputs[0].new_empty(n["B"], n["T"], *[n[d] for d in p["dims"]]) for p in sig["outputs"]]
        return outputs + [inputs[0].new_empty(rows, *[n[d] for d in s["dims"]]) for s in sig["states"]]

    @torch.library.register_fake("scanforge::scan_backward")
    def _scan_backward(key, inputs, params, initial_names, initial, output_grads, final_grads, cu_seqlens=None):
        return [torch.empty_like(t) for t in list(inputs) + list(params) + list(initial)]

    @torch.library.register_fake("scanforge::scan_step")
    def _scan_step(key, inputs, params, state_names, states):
        sig = json.loads(torch.ops.scanforge.signature(key))
        n = Signature(sig).sizes([t.unsqueeze(1) for t in inputs], params)
        return [inputs[0].new_empty(n["B"], *[n[d] for d in p["dims"]]) for p in sig["outputs"] + sig["states"]]
