"""torch.autograd.gradcheck of every model in models/, in float64 (the reference interpreter and
its generated backward): gradients to every input, parameter and initial state, through the
outputs and the final states."""
import torch

from conftest import as_tuple, random_call


def test_gradcheck_every_model(any_model):
    rec = any_model
    tensors, initial = random_call(rec, torch.float64)
    names = list(tensors) + list(initial)
    leaves = [t.requires_grad_() for t in list(tensors.values()) + list(initial.values())]

    def f(*values):
        given = dict(zip(names, values))
        outputs, finals = rec(initial_state={s: given.pop(s) for s in initial}, output_final_state=True, **given)
        return as_tuple(outputs) + tuple(finals.values())

    assert torch.autograd.gradcheck(f, leaves, atol=1e-6, rtol=1e-5)
