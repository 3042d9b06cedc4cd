"""Scenarios for early-stopping. This file runs INSIDE the sandbox, next to the submission,
and is public: read it to see exactly how your EarlyStopping is used.

The grader sends plain data (the metrics, sizes, seeds); ``run`` builds a small model with
BatchNorm (so it has buffers as well as parameters) and an optimizer, and then, for every
metric: trains the model a little (optimizer steps change the parameters IN PLACE, the
forward passes change BatchNorm's running statistics), takes a snapshot of every parameter
and buffer, and calls ``es.step(metric, model)``. It records what ``step`` returned and the
``best`` and ``best_step`` attributes after each call. At the points the grader chose it
also saves ``es.state_dict()`` with ``torch.save``, loads it with
``torch.load(..., weights_only=True)`` into a NEW ``EarlyStopping`` made with the same
arguments, and carries on with that one; or calls ``es.restore(model)`` and records what the
model holds afterwards, and whether its parameter objects are still the same. At the end it
restores, trains once more with the same optimizer, and restores again.
"""

import io
import re
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

MISSING = "<missing attribute>"


def build_model(spec, device="cpu"):
    """Linear -> BatchNorm1d -> Tanh -> Linear, drawn from a generator seeded with
    ``spec["seed"]`` (the global RNG is neither used nor changed)."""
    d, h, o = spec["sizes"]
    layers = [("fc1", nn.Linear(d, h)), ("norm", nn.BatchNorm1d(h)), ("act", nn.Tanh()),
              ("out", nn.Linear(h, o))]
    with torch.device("meta"):
        model = nn.Sequential(OrderedDict(layers))
    dtype = getattr(torch, spec.get("dtype", "float32"))
    model = model.to_empty(device=device).to(dtype)
    gen = torch.Generator().manual_seed(int(spec["seed"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            value = torch.randn(p.shape, generator=gen, dtype=dtype)
            if name.endswith("bias"):
                value = 0.1 * value
            elif name.startswith("norm"):
                value = 1.0 + 0.1 * value
            else:
                value = value / p.shape[1] ** 0.5
            p.copy_(value)
        model.norm.reset_running_stats()
    return model.train()


def make_optimizer(model, spec):
    spec = dict(spec)
    cls = {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[spec.pop("name")]
    return cls(model.parameters(), **spec)


class Trainer:
    """A few optimizer steps per call on fresh random batches: in-place updates of every
    parameter and of BatchNorm's running statistics."""

    def __init__(self, model, optimizer, seed, steps, device):
        self.model, self.optimizer, self.steps, self.device = model, optimizer, steps, device
        self.gen = torch.Generator().manual_seed(int(seed))
        self.dtype = next(model.parameters()).dtype
        self.d, self.o = model.fc1.in_features, model.out.out_features

    def __call__(self):
        for _ in range(self.steps):
            x = torch.randn(16, self.d, generator=self.gen, dtype=self.dtype).to(self.device)
            y = torch.randn(16, self.o, generator=self.gen, dtype=self.dtype).to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            F.mse_loss(self.model(x), y).backward()
            self.optimizer.step()


def snapshot(model):
    """Every parameter and buffer, by state_dict name, copied to the CPU."""
    return {name: t.detach().to("cpu", copy=True) for name, t in model.state_dict().items()}


def as_data(value):
    """A value as the protocol carries it (anything else becomes its repr)."""
    if value is None or isinstance(value, bool | int | float | str | torch.Tensor):
        return value
    return repr(value)[:80]


def reload(sol, args, es):
    """es.state_dict() through torch.save and torch.load(weights_only=True) into a new
    EarlyStopping made with the same arguments (as a resumed run would)."""
    buffer = io.BytesIO()
    torch.save(es.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    fresh = sol.EarlyStopping(args["patience"], **{k: v for k, v in args.items()
                                                  if k != "patience"})
    fresh.load_state_dict(state)
    return fresh


def restore(es, model):
    """es.restore(model), and what it did: the weights the model holds, whether the
    parameter and buffer objects are the same ones, and whether they stayed on the model's
    device."""
    objects = list(model.parameters()) + list(model.buffers())
    device = objects[0].device
    es.restore(model)
    after = list(model.parameters()) + list(model.buffers())
    return {"weights": snapshot(model),
            "same_objects": len(after) == len(objects) and all(
                a is b for a, b in zip(after, objects, strict=True)),
            "devices": sorted({str(t.device) for t in after}), "expected_device": str(device)}


def first_line(error):
    """An exception's first line, without terminal colour codes, shortened."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    return text[0][:300] if text else ""


def run(sol, ctx, spec):
    """``spec``: args (patience and, when set, min_delta and mode), metrics, model, optimizer,
    data_seed, train_steps, and optionally save_at and restore_at (lists of 1-based step
    counts after which to reload the state or to restore), final (restore at the end,
    default True) and device."""
    device = spec.get("device", "cpu")
    model = build_model(spec["model"], device)
    optimizer = make_optimizer(model, spec["optimizer"])
    train = Trainer(model, optimizer, spec["data_seed"], spec.get("train_steps", 1), device)
    args = spec["args"]
    es = sol.EarlyStopping(args["patience"], **{k: v for k, v in args.items()
                                               if k != "patience"})
    records, snapshots, restores = [], [], []
    for i, metric in enumerate(spec["metrics"], 1):
        train()
        snapshots.append(snapshot(model))
        stop = es.step(metric, model)
        records.append({"stop": as_data(stop), "best": as_data(getattr(es, "best", MISSING)),
                        "best_step": as_data(getattr(es, "best_step", MISSING))})
        if i in spec.get("save_at", ()):
            try:
                es = reload(sol, args, es)
            except Exception as e:  # reported as a wrong answer, with the reason
                return {"records": records, "snapshots": snapshots, "restores": restores,
                        "reload_error": {"step": i, "type": type(e).__name__,
                                         "message": first_line(e)}}
        if i in spec.get("restore_at", ()):
            restores.append({"step": i, **restore(es, model)})
    if spec.get("final", True):
        restores.append({"step": len(spec["metrics"]), **restore(es, model)})
        train()  # the optimizer must still drive the model's parameters
        trained = snapshot(model)
        restores.append({"step": len(spec["metrics"]), "again": True, **restore(es, model)})
    else:
        trained = None
    return {"records": records, "snapshots": snapshots, "restores": restores,
            "trained": trained}


def construct(sol, ctx, args):
    """Only make an EarlyStopping (the invalid-argument cases expect a ValueError)."""
    sol.EarlyStopping(args["patience"], **{k: v for k, v in args.items() if k != "patience"})
    return "constructed"
