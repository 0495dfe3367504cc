"""Reads the fixture checkpoint with Debian's PyTorch the way a safetensors user would, parsing the
format by hand (struct + json + torch.frombuffer, since the pip `safetensors` package is not
installed), and checks every value, the metadata, and our bf16 rounding against PyTorch's own.

Usage: read_with_pytorch.py <safetensors_fixture binary> <scratch directory>
Exits 77 (ctest's skip code) when torch cannot be imported."""
import json
import os
import struct
import subprocess
import sys

try:
    import torch
except ImportError as e:
    print(f"SKIP: PyTorch is not importable ({e})")
    sys.exit(77)

DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "I64": torch.int64}
OUR_NAMES = {"F32": "f32", "F64": "f64", "BF16": "bf16", "I64": "i64"}


def load(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    assert (8 + n) % 8 == 0, "data section is not 8-byte aligned"
    data = blob[8 + n :]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        if end == begin:
            tensors[name] = (info["dtype"], torch.empty(info["shape"], dtype=dtype))
        else:
            flat = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype)
            tensors[name] = (info["dtype"], flat.reshape(info["shape"]))
    return tensors, metadata


def main():
    fixture, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    subprocess.run([fixture, scratch], check=True)
    tensors, metadata = load(os.path.join(scratch, "fixture.safetensors"))
    with open(os.path.join(scratch, "expected.json")) as f:
        expected = json.load(f)

    failures = []
    if metadata != expected["metadata"]:
        failures.append(f"metadata {metadata} != {expected['metadata']}")
    if set(tensors) != set(expected["tensors"]):
        failures.append(f"tensor names {sorted(tensors)} != {sorted(expected['tensors'])}")
    for name, want in expected["tensors"].items():
        fmt, got = tensors[name]
        if OUR_NAMES[fmt] != want["dtype"] or list(got.shape) != want["shape"]:
            failures.append(f"{name}: {fmt} {list(got.shape)} != {want['dtype']} {want['shape']}")
            continue
        wanted = torch.tensor(want["values"], dtype=torch.float64).reshape(want["shape"])
        if not torch.equal(got.to(torch.float64), wanted):
            failures.append(f"{name}: values {got.flatten().tolist()} != {want['values']}")

    source = torch.tensor(expected["bf16_source"], dtype=torch.float32)
    ours = tensors["embedding.bf16"][1]
    theirs = source.to(torch.bfloat16)
    if not torch.equal(ours.view(torch.int16), theirs.view(torch.int16)):
        failures.append(f"bf16 rounding differs from PyTorch: ours {ours.view(torch.int16).tolist()}, "
                        f"PyTorch {theirs.view(torch.int16).tolist()}")

    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"PyTorch {torch.__version__} read {len(tensors)} tensors and the metadata exactly")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
