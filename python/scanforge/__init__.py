"""scanforge for PyTorch: any .scan recurrence as a differentiable op (docs/python.md).

    import scanforge
    rec = scanforge.load("models/mingru.scan")
    h = rec(k=k, u=u)
    h, finals = rec(k=k, u=u, initial_state={"h": h0}, output_final_state=True)
"""
import os

import torch

torch.ops.load_library(os.path.join(os.path.dirname(__file__), "libscanforge_torch.so"))

from scanforge import fake  # noqa: E402  (after the ops are loaded)
from scanforge.recurrence import Recurrence, Signature, load, load_package  # noqa: E402

fake.register()

__all__ = ["Recurrence", "Signature", "load", "load_package"]
