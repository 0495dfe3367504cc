#!/usr/bin/env python3
"""Paper 000's Shakespeare character LM with scanforge.nn in plain PyTorch: the trainer's
configuration (models/configs/shakespeare_mingru.json by default: 3 layers, embedding 384, 5000
steps), its data split (the first 90% of the characters train, the rest test), AdamW with weight
decay on weight matrices only, linear warm-up then cosine decay to lr * 0.1, gradient clipping, and
the test loss on the same eval_batches test windows at every evaluation.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_shakespeare.py [--recurrence minlstm]
        [--config models/configs/quickstart.json] [--steps 50] [--device cuda] [--data PATH] [--packed]

After training it generates --generate characters (default 200) one token at a time with the
step path (SequenceModel.step: Recurrence.step in every layer), from a newline.

--packed trains on packed variable-length batches instead of fixed windows: whole lines of the
text, each its own sequence (the state starts at zero at every line; docs/sequences.md), about
batch * context tokens per step, with cu_seqlens. The evaluation stays on the same test windows.

Windows are drawn with the C++ trainer's random stream (the runtime's Generator, seeded as
scan-train seeds it), so both see the same batches; --init-from starts from the weights of a
scan-train checkpoint (initial.safetensors of a scan-train run's output directory: the weights it
started from), which replays that run (docs/python.md, "Loss parity").
"""
import argparse
import json
import math
import os
import re
import sys
import time

import torch
from torch.nn import functional as F

import scanforge.nn
from scanforge.trainer import RuntimeGenerator, model_weights

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def read_config(path):
    """A trainer configuration: JSON with // comments."""
    with open(path) as f:
        return json.loads(re.sub(r"^\s*//.*$", "", f.read(), flags=re.M))


def load_text(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))  # code points in increasing order, as the C++ CharDataset
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    cut = int(0.9 * len(ids))
    return vocab, ids[:cut], ids[cut:]


def sample(split, batch, context, gen):
    """`batch` windows of context + 1 tokens at uniform positions: inputs and next-token targets,
    drawn as the C++ CharDataset::sampleBatch draws them from a RuntimeGenerator."""
    starts = gen.randint(len(split) - context, batch)
    windows = torch.stack([split[s:s + context + 1] for s in starts.tolist()])
    return windows[:, :-1], windows[:, 1:]


def line_spans(split, newline):
    """[start, end) of every line of `split`, its newline included."""
    ends = (split == newline).nonzero().flatten() + 1
    starts = torch.cat([torch.zeros(1, dtype=torch.long), ends[:-1]])
    return torch.stack([starts, ends], dim=1)


def sample_packed(split, spans, tokens, gen):
    """Random whole lines, end to end, until about `tokens` tokens: inputs [1, total] and targets
    [1, total] (each line predicts its next character, within the line) and the int32 offsets."""
    inputs, targets, offsets = [], [], [0]
    while offsets[-1] < tokens:
        start, end = spans[gen.randint(len(spans), 1)].tolist()[0]
        inputs.append(split[start:end - 1])  # a line of one character (an empty line) is a sequence of 0 steps
        targets.append(split[start + 1:end])
        offsets.append(offsets[-1] + end - 1 - start)
    return torch.cat(inputs)[None], torch.cat(targets)[None], torch.tensor(offsets, dtype=torch.int32)


def lr_at(step, peak, warmup, total, min_ratio):
    if step < warmup:
        return peak * (step + 1) / warmup
    if step >= total:
        return peak * min_ratio
    progress = (step - warmup) / max(1, total - warmup)
    return peak * min_ratio + (peak - peak * min_ratio) * (1 + math.cos(math.pi * progress)) / 2


def param_groups(model, weight_decay):
    """Weight decay on the weight matrices of linear and conv layers only (not on biases, norms, the
    embedding or the recurrences' own parameters), as the C++ trainer does."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 and not name.startswith("embedding") and ".params." not in name else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recurrence", default="mingru", help="mingru or minlstm: picks the paper's configuration")
    ap.add_argument("--config", help="a trainer configuration (default: models/configs/shakespeare_<recurrence>.json)")
    ap.add_argument("--data", help="tinyshakespeare.txt (default: the configuration's, from the repository root)")
    ap.add_argument("--steps", type=int, help="train this many steps instead of the configuration's")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--packed", action="store_true", help="train on packed batches of whole lines (cu_seqlens)")
    ap.add_argument("--init-from", help="start from the model weights of this scan-train checkpoint")
    ap.add_argument("--generate", type=int, default=200, help="characters to generate after training (step path)")
    ap.add_argument("--temperature", type=float, default=0.8)
    args = ap.parse_args()

    config = read_config(args.config or os.path.join(REPO, "models", "configs", f"shakespeare_{args.recurrence}.json"))
    task, train = config["task"], config["train"]
    steps = args.steps or train.get("steps", 5000)
    if args.threads:
        torch.set_num_threads(args.threads)
    data = args.data or os.path.join(REPO, task["data"])
    if not os.path.exists(data):
        sys.exit(f"train_shakespeare: no {data}; pass --data path/to/tinyshakespeare.txt")
    vocab, train_ids, test_ids = load_text(data)
    context, batch = task.get("context", 256), train.get("batch", 64)
    seed = train.get("seed", 1)

    torch.manual_seed(seed)
    model = scanforge.nn.SequenceModel.from_config(config["model"], len(vocab))
    if args.init_from:
        model.load_state_dict(model_weights(args.init_from), strict=True)
    model = model.to(args.device)
    params = sum(p.numel() for p in model.parameters())
    print(f"{config['model']['recurrence']}: {params} parameters, vocabulary {len(vocab)}, "
          f"{len(train_ids)} train / {len(test_ids)} test characters, {steps} steps on {args.device}", flush=True)
    peak = train.get("lr", 1e-3)
    opt = torch.optim.AdamW(param_groups(model, train.get("weight_decay", 0.1)), lr=peak,
                            betas=(train.get("beta1", 0.9), train.get("beta2", 0.999)), eps=1e-8)
    warmup, min_ratio, clip = train.get("warmup", 100), train.get("min_lr_ratio", 0.1), train.get("clip", 1.0)
    eval_every, eval_batches, log_every = train.get("eval_every", 100), train.get("eval_batches", 16), train.get("log_every", 10)
    data_gen = RuntimeGenerator(seed)  # scan-train's data stream
    spans = line_spans(train_ids, vocab.index("\n")) if args.packed else None

    def evaluate():
        model.eval()
        gen = RuntimeGenerator(seed ^ 0xE7A1)  # the same test windows at every evaluation, as scan-train's
        with torch.no_grad():
            losses = []
            for _ in range(eval_batches):
                x, y = sample(test_ids, batch, context, gen)
                logits = model(x.to(args.device))
                losses.append(F.cross_entropy(logits.reshape(-1, len(vocab)), y.to(args.device).reshape(-1)).item())
        model.train()
        return sum(losses) / len(losses)

    start = time.time()
    for step in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(step - 1, peak, warmup, steps, min_ratio)
        if args.packed:
            x, y, offsets = sample_packed(train_ids, spans, batch * context, data_gen)
            logits = model(x.to(args.device), cu_seqlens=offsets.to(args.device))
        else:
            x, y = sample(train_ids, batch, context, data_gen)
            logits = model(x.to(args.device))
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.to(args.device).reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if not math.isfinite(loss.item()):
            sys.exit(f"train_shakespeare: the loss is {loss.item()} at step {step}")
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip if clip > 0 else float("inf"))
        opt.step()
        if step % log_every == 0 or step == steps:
            print(f"step {step}/{steps}  loss {loss.item():.4f}  {time.time() - start:.1f}s", flush=True)
        if step % eval_every == 0 or step == steps:
            print(f"eval  step {step}  test loss {evaluate():.4f}", flush=True)
    if args.generate:
        print(generate(model, vocab, args.generate, args.temperature, seed, args.device), flush=True)


def generate(model, vocab, count, temperature, seed, device):
    """`count` characters sampled one token at a time with the step path, from a newline."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    token, cache, text = torch.tensor([vocab.index("\n")], device=device), None, []
    with torch.no_grad():
        for _ in range(count):
            logits, cache = model.step(token, cache)
            probs = torch.softmax(logits[0].float().cpu() / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=gen).to(device)
            text.append(vocab[token.item()])
    return "".join(text)


if __name__ == "__main__":
    main()
