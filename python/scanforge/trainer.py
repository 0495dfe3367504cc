"""Replaying the C++ trainer (scan-train) in PyTorch: its random stream for data windows and its
checkpoints, through the runtime's own Generator and safetensors reader (no second
implementation), so that a scanforge.nn run can start from the same weights and see the same
batches (examples/train_shakespeare.py --init-from; docs/python.md, "Loss parity")."""
import json

import torch


class RuntimeGenerator:
    """The runtime's Generator (xoshiro256**, runtime/core/Random.h) seeded like scan-train's."""

    def __init__(self, seed):
        self.state = torch.ops.scanforge.random_state(seed)

    def randint(self, n, count):
        """`count` integers uniform in [0, n), as `count` calls of Generator::uniformInt(n)."""
        ints, self.state = torch.ops.scanforge.random_ints(self.state, n, count)
        return ints


def load_checkpoint(path):
    """A safetensors checkpoint (scan-train's last.safetensors or best.safetensors) as
    ({name: tensor}, {metadata key: string})."""
    names, tensors, metadata = torch.ops.scanforge.load_checkpoint(path)
    return dict(zip(names, tensors)), json.loads(metadata)


def model_weights(path):
    """The model's weights in a scan-train checkpoint, named as scanforge.nn.SequenceModel names them."""
    tensors, metadata = load_checkpoint(path)
    if metadata.get("format") != "scanforge-train-1":
        raise ValueError(f"scanforge: {path} is not a scan-train checkpoint (format {metadata.get('format')!r})")
    return {name[len("model."):]: t for name, t in tensors.items() if name.startswith("model.")}
