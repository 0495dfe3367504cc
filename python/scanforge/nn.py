"""Layers on compiled recurrences, as the C++ runtime builds them (models/layers/, docs/training.md):

    ScanLayer   any .scan recurrence: one in-projection from the embedding to every input port,
                the recurrence with its learned parameters, optionally the bilinear output gating
                (W_m y) * (W_x y) of paper 001 (eq. 2), and a down-projection back to the embedding.
    Block       the papers' residual block: Norm, causal depthwise conv (4) + SiLU, the layer, and
                an optional MLP (paper 000, appendix C).
    SequenceModel  embedding, blocks, final norm and head: paper 000's char-LM with
                SequenceModel.from_config (the "model" section of models/configs/*.json).
    MinGRU, MinLSTM, GatedRNN   paper 000's layers and paper 001's gated RNN with output gating.

Parameter names and shapes are those of scan-train's checkpoints (without their "model." prefix),
so that a SequenceModel loads one with load_state_dict.

Recurrence parameters and gate biases are initialised by the runtime's own initialisers (chrono,
forget-bias, UGI, Gumbel, s4d_real, ...), through torch.ops.scanforge.init_*; linear, conv and
embedding layers use PyTorch's defaults, which are the runtime's distributions.
"""
import json
import math
import os

import torch
from torch import nn
from torch.nn import functional as F

from scanforge.recurrence import Recurrence, load

MODELS = os.path.join(os.path.dirname(__file__), "models")  # the .scan files of models/


def _seed():
    """A seed for the runtime's Generator, drawn from torch's, so that torch.manual_seed rules."""
    return int(torch.randint(0, 2**62, (1,)).item())


def _spec(spec):
    """An initialiser as the trainer's configurations write it ({"init": "chrono", "t_max": 128}, or
    just "ugi"), as the runtime's op reads it."""
    if isinstance(spec, str):
        spec = {"init": spec}
    args = {k: v for k, v in spec.items() if k != "init"}
    return json.dumps({"kind": spec["init"], "args": args})


class ScanLayer(nn.Module):
    """`recurrence`: a path, a name of models/ ("mingru") or a loaded Recurrence. The dimension 'd'
    is expansion * embed; every other dimension needs a size in `dims`. `params` and `gate_bias`
    map parameter and input names to initialisers as the configurations write them
    ({"init": "gumbel", "alpha": 0.0, "tau": 0.5}, or "ugi"); parameters default to the runtime's
    choice by name (A: s4d_real, D: ones, ...)."""

    def __init__(self, recurrence, embed, expansion=2, dims=None, params=None, gate_bias=None, output_gating=0):
        super().__init__()
        if not isinstance(recurrence, Recurrence):
            path = recurrence if os.path.exists(recurrence) else os.path.join(MODELS, recurrence + ".scan")
            recurrence = load(path)
        self.recurrence = recurrence
        sig = recurrence.signature
        sizes = {}
        for port in sig.inputs + sig.params + sig.states + sig.outputs:
            for d in port.dims:
                if d == "d":
                    sizes[d] = expansion * embed
                elif d in (dims or {}):
                    sizes[d] = dims[d]
                else:
                    raise ValueError(f"scanforge.nn: recurrence '{sig.name}': dimension '{d}' has no size; pass dims={{'{d}': ...}}")
        self._input_shapes = [tuple(sizes[d] for d in p.dims) for p in sig.inputs]
        widths = [math.prod(s) for s in self._input_shapes]
        outputs = sum(math.prod(sizes[d] for d in p.dims) for p in sig.outputs)
        self.in_proj = nn.Linear(embed, sum(widths))
        self.out_gate_m = nn.Linear(outputs, output_gating) if output_gating else None
        self.out_gate_x = nn.Linear(outputs, output_gating) if output_gating else None
        self.out_proj = nn.Linear(output_gating or outputs, embed)

        gate_bias = dict(gate_bias or {})
        offset = 0
        with torch.no_grad():
            for port, width in zip(sig.inputs, widths):
                if port.name in gate_bias:
                    bias = torch.empty(width)
                    torch.ops.scanforge.init_gate_bias_(bias, f"gate_bias.{port.name}", _spec(gate_bias.pop(port.name)),
                                                        embed, _seed())
                    self.in_proj.bias[offset:offset + width] = bias
                offset += width
            if gate_bias:
                raise ValueError(f"scanforge.nn: '{sig.name}' has no input named {', '.join(map(repr, gate_bias))}")
            params = dict(params or {})
            self.params = nn.ParameterDict()
            for p in sig.params:  # in signature order: lru_gamma reads nu_log, initialised first
                value = torch.empty(*[sizes[d] for d in p.dims])
                spec = _spec(params.pop(p.name)) if p.name in params else torch.ops.scanforge.default_parameter_init(p.name)
                torch.ops.scanforge.init_parameter_(value, f"params.{p.name}", spec, _seed(), self.params.get("nu_log"))
                self.params[p.name] = nn.Parameter(value)
            if params:
                raise ValueError(f"scanforge.nn: '{sig.name}' has no parameter named {', '.join(map(repr, params))}")

    def forward(self, x, cu_seqlens=None):
        """x [B, T, embed]; packed sequences (docs/sequences.md): x [1, total, embed] and cu_seqlens."""
        sig = self.recurrence.signature
        B, T = x.shape[:2]
        pieces = torch.split(self.in_proj(x), [math.prod(s) for s in self._input_shapes], dim=-1)
        streams = {p.name: piece.reshape(B, T, *shape).contiguous()
                   for p, piece, shape in zip(sig.inputs, pieces, self._input_shapes)}
        outputs = self.recurrence(**streams, **{n: p for n, p in self.params.items()}, cu_seqlens=cu_seqlens)
        return self._out(outputs, (B, T))

    def step(self, x, state=None):
        """Decoding: x [B, embed] of one step and the recurrence's states (None: zeros) -> the
        layer's output [B, embed] and the states after the step (Recurrence.step)."""
        sig = self.recurrence.signature
        B = x.shape[0]
        pieces = torch.split(self.in_proj(x), [math.prod(s) for s in self._input_shapes], dim=-1)
        streams = {p.name: piece.reshape(B, *shape) for p, piece, shape in zip(sig.inputs, pieces, self._input_shapes)}
        outputs, state = self.recurrence.step(**streams, **{n: p for n, p in self.params.items()}, state=state)
        return self._out(outputs, (B,)), state

    def _out(self, outputs, lead):
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        y = torch.cat([o.reshape(*lead, -1) for o in outputs], dim=-1)
        if self.out_gate_m is not None:
            y = self.out_gate_m(y) * self.out_gate_x(y)
        return self.out_proj(y)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _norm(kind, dim):
    if kind == "layernorm":
        return nn.LayerNorm(dim, eps=1e-5)
    if kind == "rmsnorm":
        return RMSNorm(dim)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"scanforge.nn: unknown normalisation '{kind}' (layernorm, rmsnorm or none)")


class CausalConv(nn.Module):
    """Causal depthwise convolution over time: y[t] = bias + sum_j weight[:, j] * x[t - (K-1) + j],
    the runtime's causalConv1d, with its weight layout [C, K] and PyTorch's Conv1d initialisation."""

    def __init__(self, channels, width=4):
        super().__init__()
        bound = 1 / math.sqrt(width)
        self.weight = nn.Parameter(torch.empty(channels, width).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(channels).uniform_(-bound, bound))

    def forward(self, x, cu_seqlens=None):  # [B, T, C]
        width, T = self.weight.shape[1], x.shape[1]
        if cu_seqlens is None:
            y = F.conv1d(x.transpose(1, 2), self.weight.unsqueeze(1), self.bias, padding=width - 1, groups=x.shape[2])
            return y[..., :T].transpose(1, 2)
        # Packed sequences: a tap that reaches before its sequence's first step reads zero, as before
        # t = 0 of the sequence alone.
        pos = torch.arange(T, device=x.device)
        offsets = cu_seqlens.to(device=x.device, dtype=torch.long)
        starts = offsets[torch.searchsorted(offsets, pos, right=True) - 1]
        padded = F.pad(x, (0, 0, width - 1, 0))
        y = self.bias
        for j in range(width):
            inside = (pos - (width - 1 - j) >= starts).to(x.dtype)[None, :, None]
            y = y + self.weight[:, j] * padded[:, j:j + T] * inside
        return y

    def step(self, x, history=None):
        """Decoding: x [B, C] of one step and the previous width - 1 inputs [B, width - 1, C] (None:
        zeros, as before t = 0) -> y [B, C] and the new history."""
        width = self.weight.shape[1]
        if history is None:
            history = x.new_zeros(x.shape[0], width - 1, x.shape[1])
        window = torch.cat([history, x[:, None]], dim=1)
        return self.bias + (window * self.weight.t()).sum(dim=1), window[:, 1:]


class Block(nn.Module):
    """h = Norm(x); h = SiLU(CausalConv4(h)) [conv]; x = x + Dropout(mixer(h));
    x = x + Dropout(W2 GELU(W1 Norm(x))) [mlp]."""

    def __init__(self, mixer, embed, conv=True, mlp=True, mlp_expansion=4, norm="layernorm", dropout=0.0):
        super().__init__()
        self.norm1 = _norm(norm, embed)
        self.conv = CausalConv(embed) if conv else None
        self.mixer = mixer
        self.norm2 = _norm(norm, embed) if mlp else None
        self.mlp = nn.ModuleDict({"fc1": nn.Linear(embed, mlp_expansion * embed),
                                  "fc2": nn.Linear(mlp_expansion * embed, embed)}) if mlp else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, cu_seqlens=None):
        h = self.norm1(x)
        if self.conv is not None:
            h = F.silu(self.conv(h, cu_seqlens))
        x = x + self.dropout(self.mixer(h, cu_seqlens))
        return self._mlp(x)

    def step(self, x, cache=None):
        """Decoding: x [B, embed] of one step and the block's cache (None: a fresh start) -> the
        block's output [B, embed] and its cache (the convolution's history, the mixer's states)."""
        cache = dict(cache or {})
        h = self.norm1(x)
        if self.conv is not None:
            h, cache["conv"] = self.conv.step(h, cache.get("conv"))
            h = F.silu(h)
        y, cache["state"] = self.mixer.step(h, cache.get("state"))
        return self._mlp(x + self.dropout(y)), cache

    def _mlp(self, x):
        if self.mlp is not None:
            x = x + self.dropout(self.mlp["fc2"](F.gelu(self.mlp["fc1"](self.norm2(x)))))
        return x


class SequenceModel(nn.Module):
    """Token ids [B, T] -> logits [B, T, vocab]: embedding, `layers` blocks around ScanLayers,
    final norm and head (paper 000's language model)."""

    def __init__(self, vocab, recurrence="mingru", layers=3, embed=384, expansion=2, conv=True, mlp=True,
                 mlp_expansion=4, norm="layernorm", dropout=0.0, output_gating=0, dims=None, params=None,
                 gate_bias=None, gate_bias_first_layer_only=False):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.layers = nn.ModuleList(
            Block(ScanLayer(recurrence, embed, expansion, dims, params,
                            gate_bias if i == 0 or not gate_bias_first_layer_only else None, output_gating),
                  embed, conv, mlp, mlp_expansion, norm, dropout)
            for i in range(layers))
        self.norm = _norm(norm, embed)
        self.head = nn.Linear(embed, vocab)

    @classmethod
    def from_config(cls, model, vocab):
        """From the "model" section of a trainer configuration (models/configs/*.json)."""
        options = set(cls.__init__.__code__.co_varnames[2:cls.__init__.__code__.co_argcount])
        unknown = set(model) - options
        if unknown:
            raise ValueError(f"scanforge.nn: unknown model option(s) {sorted(unknown)}; known: {sorted(options)}")
        return cls(vocab, **model)

    def forward(self, tokens, cu_seqlens=None):
        """tokens [B, T]; packed sequences (docs/sequences.md): tokens [1, total] and cu_seqlens."""
        x = self.embedding(tokens)
        for block in self.layers:
            x = block(x, cu_seqlens)
        return self.head(self.norm(x))

    def step(self, tokens, cache=None):
        """Decoding: tokens [B] of one step and the model's cache (None: a fresh start) -> logits
        [B, vocab] and the cache, one entry per block (docs/sequences.md, "Decoding")."""
        x = self.embedding(tokens)
        cache = list(cache or [None] * len(self.layers))
        for i, block in enumerate(self.layers):
            x, cache[i] = block.step(x, cache[i])
        return self.head(self.norm(x)), cache


def MinGRU(embed, expansion=2, **kwargs):
    """Paper 000's minGRU layer (section 3.1; models/mingru.scan)."""
    return ScanLayer("mingru", embed, expansion, **kwargs)


def MinLSTM(embed, expansion=2, **kwargs):
    """Paper 000's minLSTM layer (section 3.2; models/minlstm.scan)."""
    return ScanLayer("minlstm", embed, expansion, **kwargs)


def GatedRNN(embed, expansion=6, output_gating=100, **kwargs):
    """Paper 001's gated linear RNN (eq. 2; models/glu_rnn.scan): input gating m * v, a diagonal
    recurrence and the bilinear output gating."""
    return ScanLayer("glu_rnn", embed, expansion, output_gating=output_gating, **kwargs)
