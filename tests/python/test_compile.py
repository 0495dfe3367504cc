"""torch.compile(fullgraph=True) traces a model that calls the ops, through their fake
implementations (torch >= 2.4, torch.library.register_fake); older torch has neither."""
import pytest
import torch

import scanforge.nn as snn


@pytest.mark.skipif(not hasattr(torch.library, "register_fake"), reason="torch < 2.4 has no register_fake")
def test_compile_fullgraph_traces_a_scan_layer():
    torch.manual_seed(0)
    layer = snn.ScanLayer("mingru", embed=8, expansion=2)
    x = torch.randn(2, 5, 8, requires_grad=True)
    want = layer(x)
    got = torch.compile(layer, fullgraph=True)(x)
    assert torch.allclose(got, want)
    got.sum().backward()
    assert x.grad is not None
