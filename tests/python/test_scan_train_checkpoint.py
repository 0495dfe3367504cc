"""scanforge.nn builds the C++ trainer's model exactly: a checkpoint scan-train wrote (quick-start
configuration, a few steps) loads into SequenceModel.from_config with strict names and shapes, and
greedy decoding from it gives the same text as scan-sample --top-k 1 (the C++ runtime's layers,
streaming; here PyTorch's layers and the scanforge op over the whole prefix)."""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

import scanforge.nn as snn
from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "runtime"))
from read_with_pytorch import load as read_safetensors  # noqa: E402  (the repository's reader)

SCAN_TRAIN, SCAN_SAMPLE, TEXT = (os.environ.get(v) for v in ("SCANFORGE_SCAN_TRAIN", "SCANFORGE_SCAN_SAMPLE",
                                                             "SCANFORGE_TRAIN_TEXT"))
pytestmark = pytest.mark.skipif(not (SCAN_TRAIN and SCAN_SAMPLE and TEXT), reason="ctest sets the tools' paths")


def test_scan_train_checkpoint_loads_and_decodes_the_same(tmp_path):
    subprocess.run([SCAN_TRAIN, os.path.join(REPO, "models", "configs", "quickstart.json"), "--set", "train.steps=40",
                    "--set", "train.eval_every=40", "--set", f"task.data={TEXT}", "--set", f"output.dir={tmp_path}",
                    "--set", "output.sample_tokens=0"], check=True, capture_output=True)
    checkpoint = str(tmp_path / "best.safetensors")
    tensors, meta = read_safetensors(checkpoint)
    config = json.loads(re.sub(r"^\s*//.*$", "", meta["config"], flags=re.M))
    vocab = [chr(c) for c in json.loads(meta["vocabulary"])]
    model = snn.SequenceModel.from_config(config["model"], len(vocab))
    model.load_state_dict({name[len("model."):]: value for name, (_, value) in tensors.items()}, strict=True)

    prompt = vocab[1] + vocab[-1] + vocab[len(vocab) // 2]  # characters of any text's vocabulary
    ids = [vocab.index(c) for c in prompt]
    with torch.no_grad():
        for _ in range(40):
            ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
    want = subprocess.run([SCAN_SAMPLE, checkpoint, "--prompt", prompt, "--tokens", "40", "--top-k", "1"],
                          check=True, capture_output=True, text=True).stdout
    assert "".join(vocab[i] for i in ids) == want.rstrip("\n")


def test_train_shakespeare_replays_a_scan_train_run(tmp_path):
    """examples/train_shakespeare.py --init-from a run's initial.safetensors sees the same batches
    (the runtime's Generator) from the same weights: its losses follow scan-train's (measured: equal
    to 4 decimals at steps 30 and 250)."""
    subprocess.run([SCAN_TRAIN, os.path.join(REPO, "models", "configs", "quickstart.json"), "--set", "train.steps=30",
                    "--set", "train.eval_every=30", "--set", f"task.data={TEXT}", "--set", f"output.dir={tmp_path}",
                    "--set", "output.sample_tokens=0"], check=True, capture_output=True)
    with open(tmp_path / "metrics.jsonl") as f:
        records = [json.loads(line) for line in f]
    want_train = next(r["train_loss"] for r in records if r["step"] == 30 and "train_loss" in r)
    want_test = next(r["test_loss"] for r in records if r["step"] == 30 and "test_loss" in r)
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples", "train_shakespeare.py"),
                          "--config", os.path.join(REPO, "models", "configs", "quickstart.json"), "--steps", "30",
                          "--data", TEXT, "--init-from", str(tmp_path / "initial.safetensors"), "--generate", "0"],
                         check=True, capture_output=True, text=True).stdout
    got_train = float(re.search(r"step 30/30  loss (\S+)", out).group(1))
    got_test = float(re.search(r"eval  step 30  test loss (\S+)", out).group(1))
    assert abs(got_train - want_train) < 2e-3, (got_train, want_train)
    assert abs(got_test - want_test) < 2e-3, (got_test, want_test)


def test_runtime_generator_and_checkpoint_errors(tmp_path):
    from scanforge.trainer import RuntimeGenerator, model_weights
    gen = RuntimeGenerator(7)
    first = gen.randint(1000, 5)
    assert first.dtype == torch.long and first.min() >= 0 and first.max() < 1000
    assert not torch.equal(first, gen.randint(1000, 5)), "the stream advances"
    assert torch.equal(RuntimeGenerator(7).randint(1000, 5), first), "a seed gives one stream"
    with pytest.raises(ValueError, match="needs n >= 1"):
        gen.randint(0, 1)
    with pytest.raises(ValueError, match="random_ints"):
        torch.ops.scanforge.random_ints("not a state", 10, 1)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match="load_checkpoint"):
        model_weights(str(bad))
