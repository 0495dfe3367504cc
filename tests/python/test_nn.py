"""scanforge.nn: a ScanLayer on every model of models/ trains (gradients reach every parameter),
its parameters and gate biases come from the runtime's initialisers, and the papers' layers and
language model have the shapes and parameter counts the C++ runtime builds."""
import math
import os

import pytest
import torch

import scanforge.nn as snn
from conftest import MODELS

DIMS = {"n": 4, "k": 3, "e": 5}  # the dimensions other than d that models/ uses


@pytest.mark.parametrize("path", MODELS, ids=lambda p: os.path.basename(p)[:-5])
def test_scan_layer_on_every_model(path):
    torch.manual_seed(0)
    layer = snn.ScanLayer(path, embed=8, expansion=2, dims=DIMS)
    x = torch.randn(2, 7, 8)
    y = layer(x)
    assert y.shape == (2, 7, 8)
    (y * torch.randn_like(y)).sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_parameters_use_the_runtime_initialisers():
    layer = snn.ScanLayer("selective_ssm", embed=4, expansion=1, dims={"n": 3})
    assert torch.equal(layer.params["A"], -torch.tensor([1.0, 2.0, 3.0]).repeat(4, 1))  # s4d_real
    assert torch.equal(layer.params["D"], torch.ones(4))
    lru = snn.ScanLayer("lru", embed=64, expansion=1)
    radius = torch.exp(-torch.exp(lru.params["nu_log"]))  # lru_nu: |lambda| uniform on [0.9, 0.999]
    assert 0.9 <= radius.min() and radius.max() <= 0.999
    gamma = torch.exp(lru.params["gamma_log"])  # lru_gamma = sqrt(1 - |lambda|^2)
    assert torch.allclose(gamma, torch.sqrt(1 - radius**2), rtol=1e-4)


def test_gate_bias_initialisers():
    embed, expansion = 16, 2
    width = embed * expansion
    chrono = snn.ScanLayer("minlstm", embed, expansion, gate_bias={"f": {"init": "chrono", "t_max": 64}})
    f_bias = chrono.in_proj.bias[:width]  # f is the first input port
    assert (f_bias >= 0).all() and (f_bias < math.log(63)).all() and f_bias.std() > 0.1
    gumbel = snn.ScanLayer("mingated", embed, expansion, gate_bias={"k": {"init": "gumbel", "alpha": 0.0, "tau": 0.5}})
    u = torch.sigmoid(gumbel.in_proj.bias[:width] * 0.5)  # (alpha + logit(u)) / tau, u in [1/w, 1 - 1/w]
    assert (u >= 1 / width - 1e-6).all() and (u <= 1 - 1 / width + 1e-6).all()
    with pytest.raises(ValueError, match="'mingated' has no input named 'q'"):
        snn.ScanLayer("mingated", embed, expansion, gate_bias={"q": "ugi"})
    with pytest.raises(ValueError, match="chrono needs t_max > 2"):
        snn.ScanLayer("minlstm", embed, expansion, gate_bias={"f": "chrono"})
    with pytest.raises(ValueError, match="dimension 'n' has no size"):
        snn.ScanLayer("selective_ssm", embed, expansion)


def test_papers_layers_and_language_model():
    # Paper 000's char-LM: 3 layers, embedding 384, expansion 2, conv and MLP (as scan-train builds it).
    model = snn.SequenceModel(vocab=65, recurrence="mingru", layers=3, embed=384)
    E, H, V = 384, 768, 65
    norm = 2 * E                                   # LayerNorm weight and bias
    conv = E * 4 + E                               # depthwise, kernel 4
    scan = (E * 2 * H + 2 * H) + (H * E + E)       # in-projection to k and u, down-projection
    mlp = (E * 4 * E + 4 * E) + (4 * E * E + E)
    block = norm + conv + scan + norm + mlp
    assert sum(p.numel() for p in model.parameters()) == V * E + 3 * block + norm + (E * V + V)
    tokens = torch.randint(0, V, (2, 9))
    assert model(tokens).shape == (2, 9, V)
    assert snn.MinLSTM(8)(torch.randn(1, 3, 8)).shape == (1, 3, 8)
    gated = snn.GatedRNN(16, expansion=6, output_gating=100)
    assert gated.out_gate_m.out_features == 100 and gated(torch.randn(2, 4, 16)).shape == (2, 4, 16)


def test_language_model_on_packed_sequences_equals_each_sequence_alone():
    """Packed lines (lengths 4, 0, 1, 9) through the whole model, the causal convolution included,
    against each line alone: logits within 1e-5 relative, and the gradients of the same loss."""
    torch.manual_seed(3)
    model = snn.SequenceModel(vocab=11, recurrence="mingru", layers=2, embed=16)
    lengths = [4, 0, 1, 9]
    tokens = torch.randint(0, 11, (1, sum(lengths)))
    offsets = torch.tensor([0, 4, 4, 5, 14], dtype=torch.int32)
    packed = model(tokens, cu_seqlens=offsets)
    packed.square().sum().backward()
    packed_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    alone = [model(tokens[:, s:e]) for s, e in zip(offsets[:-1].tolist(), offsets[1:].tolist()) if e > s]
    sum(a.square().sum() for a in alone).backward()
    want = torch.cat(alone, dim=1)
    assert (packed - want).norm() <= 1e-5 * want.norm()
    for got, p in zip(packed_grads, model.parameters()):
        assert (got - p.grad).norm() <= 1e-5 * p.grad.norm()


@pytest.mark.parametrize("recurrence", ["mingru", "glu_rnn"])
def test_language_model_steps_equal_the_whole_forward(recurrence):
    """SequenceModel.step (the causal convolution's history, Recurrence.step in every layer) token
    by token gives the logits of one forward over the whole sequence, within 1e-5 relative."""
    torch.manual_seed(4)
    model = snn.SequenceModel(vocab=11, recurrence=recurrence, layers=2, embed=16)
    tokens = torch.randint(0, 11, (3, 12))
    with torch.no_grad():
        want = model(tokens)
        cache, got = None, []
        for t in range(tokens.shape[1]):
            logits, cache = model.step(tokens[:, t], cache)
            got.append(logits)
    got = torch.stack(got, dim=1)
    assert (got - want).norm() <= 1e-5 * want.norm()
