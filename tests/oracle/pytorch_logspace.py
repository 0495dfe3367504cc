#!/usr/bin/env python3
"""External oracle: scanforge's minGRU and minLSTM (forward and generated backward, on the float64
reference interpreter) against PyTorch autograd running the paper's log-space code
(paper 000 of docs/architecture.md, Appendix B.3, Listings 5, 6, 8 and 10), in float64.

usage: pytorch_logspace.py REFERENCE_RUN MODELS_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
TOLERANCE = 1e-9  # both sides compute in float64; the log-space scan loses a few digits


# ---- the paper's code (Appendix B.3), verbatim apart from taking the linear maps' outputs ----
def parallel_scan_log(log_coeffs, log_values):
    a_star = F.pad(torch.cumsum(log_coeffs, dim=1), (0, 0, 1, 0))
    log_h0_plus_b_star = torch.logcumsumexp(log_values - a_star, dim=1)
    log_h = a_star + log_h0_plus_b_star
    return torch.exp(log_h)[:, 1:]


def g(x):
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def log_g(x):
    return torch.where(x >= 0, (F.relu(x) + 0.5).log(), -F.softplus(-x))


def mingru_logspace(k, u, h_0):
    log_z = -F.softplus(-k)
    log_coeffs = -F.softplus(k)
    log_h_0 = log_g(h_0)
    log_tilde_h = log_g(u)
    return parallel_scan_log(log_coeffs, torch.cat([log_h_0, log_z + log_tilde_h], dim=1))


def minlstm_logspace(f, i, u, h_0):
    diff = F.softplus(-f) - F.softplus(-i)
    log_f = -F.softplus(diff)
    log_i = -F.softplus(-diff)
    log_h_0 = log_g(h_0)
    log_tilde_h = log_g(u)
    return parallel_scan_log(log_f, torch.cat([log_h_0, log_i + log_tilde_h], dim=1))


# ---- comparison ----
def tensor_json(t):
    return {"shape": list(t.shape), "data": t.detach().flatten().tolist()}


def from_json(j):
    return torch.tensor(j["data"]).reshape(j["shape"])


def rel_error(a, b):
    return (torch.linalg.norm(a - b) / torch.linalg.norm(b)).item()


def check(name, inputs, paper_fn, helper, models):
    gen = torch.Generator().manual_seed(1234)
    B, T, D = 3, 64, 5
    tensors = {n: (torch.rand(B, T, D, generator=gen) * 4 - 2).requires_grad_() for n in inputs}
    h_0 = (torch.rand(B, 1, D, generator=gen) * 2 - 1).requires_grad_()
    weights = torch.rand(B, T, D, generator=gen) * 2 - 1

    h = paper_fn(*[tensors[n] for n in inputs], h_0)
    (h * weights).sum().backward()

    # The paper starts from log_g(h_0), i.e. from the state g(h_0); give scanforge that state.
    request = {
        "model": os.path.join(models, name + ".scan"),
        "inputs": {n: tensor_json(t) for n, t in tensors.items()},
        "initial": {"h": tensor_json(g(h_0.detach())[:, 0, :])},
        "output_grads": {"h": tensor_json(weights)},
    }
    with tempfile.TemporaryDirectory() as tmp:
        req, resp = os.path.join(tmp, "request.json"), os.path.join(tmp, "response.json")
        with open(req, "w") as fh:
            json.dump(request, fh)
        subprocess.run([helper, req, resp], check=True)
        with open(resp) as fh:
            response = json.load(fh)

    results = {"forward h": rel_error(from_json(response["outputs"]["h"]), h.detach())}
    for n in inputs:
        results["d/d" + n] = rel_error(from_json(response["input_grads"][n]), tensors[n].grad)
    # Chain rule through the paper's g(h_0): dL/dh_0 = dL/dstate * g'(h_0).
    x = h_0.detach()[:, 0, :]
    g_slope = torch.where(x >= 0, torch.ones_like(x), torch.sigmoid(x) * (1 - torch.sigmoid(x)))
    results["d/dh_0"] = rel_error(from_json(response["initial_grads"]["h"]) * g_slope, h_0.grad[:, 0, :])

    ok = True
    for what, err in results.items():
        status = "ok" if err <= TOLERANCE else "FAIL"
        ok &= err <= TOLERANCE
        print(f"{name:8s} {what:10s} relative error {err:.2e}  (bound {TOLERANCE:.0e})  {status}")
    return ok


def main():
    helper, models = sys.argv[1], sys.argv[2]
    ok = check("mingru", ["k", "u"], mingru_logspace, helper, models)
    ok &= check("minlstm", ["f", "i", "u"], minlstm_logspace, helper, models)
    print("torch", torch.__version__)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
