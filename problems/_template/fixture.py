"""Scenario fixture: runs INSIDE the sandbox, next to the submission, and is public.

A scenario builds objects that cannot cross the protocol (models, loaders, optimizers) from
plain data, calls the learner's code with them and returns plain data (tensors, numbers,
lists). Tests call it with ``t.sub.scenario("name", ...)`` and ``t.ref.scenario(...)``.

Each scenario is ``def name(sol, ctx, *args, **kwargs)``: ``sol`` is the submission's module
(or the reference's), ``ctx.emit(data)`` sends progress to the grader and ``ctx.ask(data)``
waits for its answer. Nothing returned from here is trusted: the grader compares it with the
reference's result.
"""

import torch


def masked_mean_of_module(sol, ctx, x, mask):
    """Call masked_mean on the output of a small module, as a training loop would."""
    layer = torch.nn.Identity()
    with torch.no_grad():
        out = sol.masked_mean(layer(x), mask)
    ctx.emit({"called": True})
    return out
