"""Scenarios for token-accumulation. This file runs INSIDE the sandbox, next to the
submission, and is public: read it to see exactly how your train_epoch is called.

The grader sends plain data (token ids, labels, sizes, seeds); a scenario builds a small
causal language model, a DataLoader over the given micro-batches and the optimizer, calls
``sol.train_epoch(...)`` and returns plain data. To see what happened inside the call it
records, through the optimizer's step hooks and a wrapper around ``zero_grad``:

- at every optimizer step: the gradients the step is about to use and the learning rate;
  after it: the parameters;
- the order of the ``optimizer.zero_grad()`` and ``optimizer.step()`` calls.

The grader compares all of it with the reference solution run on the same inputs. The
helpers that build the model and the loader are shared with the grader (tests.py), so both
sides build identical objects.
"""

from collections import OrderedDict

import torch
from torch import nn
from torch.utils.data import DataLoader


class CausalMean(nn.Module):
    """Position t sees the mean of positions 0..t: a causal mixing layer (so padding on
    the right never changes what the real positions compute)."""

    def forward(self, h):
        steps = torch.arange(1, h.shape[1] + 1, device=h.device, dtype=h.dtype)
        return h.cumsum(1) / steps[:, None]


def build_model(spec, device="cpu"):
    """A tiny causal LM, ``input_ids [B, L] -> logits [B, L, V]``, drawn from a CPU
    generator seeded with ``spec["seed"]`` (the global RNG is neither used nor changed);
    ``kind="bigram"`` is the statement's ``logits = W[input_ids]``."""
    vocab, dtype = spec["vocab"], getattr(torch, spec.get("dtype", "float64"))
    with torch.device("meta"):
        if spec.get("kind") == "bigram":
            model = nn.Sequential(OrderedDict([("table", nn.Embedding(vocab, vocab))]))
        else:
            h = spec["hidden"]
            model = nn.Sequential(OrderedDict([
                ("embed", nn.Embedding(vocab, h)), ("mix", CausalMean()),
                ("fc", nn.Linear(h, h)), ("act", nn.Tanh()), ("head", nn.Linear(h, vocab))]))
    model = model.to_empty(device=device).to(dtype)
    init_device = device if spec.get("init_on_device") else "cpu"
    gen = torch.Generator(device=init_device).manual_seed(int(spec["seed"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if spec.get("kind") == "bigram":
                value = torch.zeros(p.shape, dtype=dtype)
            else:
                value = torch.randn(p.shape, generator=gen, dtype=dtype, device=init_device)
                value = 0.1 * value if name.endswith("bias") else (
                    value if name.startswith("embed") else value / p.shape[1] ** 0.5)
            p.copy_(value)
    return model.train()


def as_batch(batch):
    """collate_fn: a dataset item already is the micro-batch ``(input_ids, labels)``."""
    return batch


def make_loader(batches, device="cpu"):
    """A DataLoader that yields the given ``(input_ids, labels)`` micro-batches in order."""
    items = [(ids.to(device), labels.to(device)) for ids, labels in batches]
    return DataLoader(items, batch_size=None, collate_fn=as_batch)


# Adam's eps for the hidden cases. At the default 1e-8 its step, g / (|g| + eps) per element,
# turns a gradient near 1e-8 into anything between 0 and a full step: a correct solution that
# computes its loss from float32 logits (the tolerances allow it: an accepted fixture does it)
# rounds such an element's gradient by ~5e-10, within the gradient check, and that moved a
# parameter 7x past the check's tolerance (seed 665321823229814113, case optimizers). At 1e-4
# the same rounding moves a parameter by ~1e-8.
ADAM_EPS = 1e-4


def make_optimizer(model, spec):
    spec = dict(spec)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
           "adamw": torch.optim.AdamW}[spec.pop("name")]
    if cls is not torch.optim.SGD:
        spec.setdefault("eps", ADAM_EPS)
    return cls(model.parameters(), **spec)


def stale_gradients(model, seed):
    """Gradients left on the parameters before train_epoch is called."""
    gen = torch.Generator().manual_seed(int(seed))
    return [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in model.parameters()]


def _cpu(tensors):
    return [None if t is None else t.detach().to("cpu", copy=True) for t in tensors]


class Recorder:
    """Records what the optimizer was asked to do."""

    def __init__(self, model, optimizer):
        self.params = list(model.parameters())
        self.steps, self.calls = [], []
        optimizer.register_step_pre_hook(self.before_step)
        optimizer.register_step_post_hook(self.after_step)
        zero_grad = optimizer.zero_grad

        def logged_zero_grad(*args, **kwargs):
            self.calls.append("zero_grad")
            return zero_grad(*args, **kwargs)

        optimizer.zero_grad = logged_zero_grad

    def before_step(self, optimizer, args, kwargs):
        self.calls.append("step")
        self.steps.append({"grads": _cpu(p.grad for p in self.params),
                           "lr": [float(g["lr"]) for g in optimizer.param_groups]})

    def after_step(self, optimizer, args, kwargs):
        self.steps[-1]["params"] = _cpu(self.params)


# ---------------------------------------------------------------- scenarios


def train(sol, ctx, setup):
    """Build everything from ``setup``, call ``sol.train_epoch`` once per epoch and return
    what it returned together with what the recorder saw.

    ``setup``: model (a build_model spec), batches (a list of (input_ids, labels)),
    accum_steps, optimizer, and optionally ignore_index (passed only when set), stale_grads
    (a seed), epochs (default 1) and device (default "cpu").
    """
    device = setup.get("device", "cpu")
    model = build_model(setup["model"], device)
    loader = make_loader(setup["batches"], device)
    optimizer = make_optimizer(model, setup["optimizer"])
    recorder = Recorder(model, optimizer)
    if setup.get("stale_grads") is not None:
        for p, g in zip(model.parameters(), stale_gradients(model, setup["stale_grads"]),
                        strict=True):
            p.grad = g.to(device)
    options = {}
    if setup.get("ignore_index") is not None:
        options["ignore_index"] = setup["ignore_index"]
    returned = [sol.train_epoch(model, loader, optimizer, setup["accum_steps"], **options)
                for _ in range(setup.get("epochs", 1))]
    return {"returned": returned, "steps": recorder.steps, "calls": recorder.calls,
            "final": _cpu(model.parameters())}


def random_batches(gen, spec):
    """The throughput data, drawn here from a seed (nothing large crosses the protocol):
    micro-batches of random sizes, each row with a prompt and right padding that are not
    targets, so micro-batches hold very different numbers of counted tokens."""
    vocab, out = spec["model"]["vocab"], []
    for _ in range(spec["micro_batches"]):
        b = int(torch.randint(spec["rows"][0], spec["rows"][1] + 1, (1,), generator=gen))
        n = int(torch.randint(spec["length"][0], spec["length"][1] + 1, (1,), generator=gen))
        ids = torch.randint(1, vocab, (b, n), generator=gen)
        ends = torch.randint(1, n + 1, (b, 1), generator=gen)
        starts = (torch.rand(b, 1, generator=gen) * ends).long()
        pos = torch.arange(n)[None, :]
        labels = torch.randint(0, vocab, (b, n), generator=gen)
        labels[(pos < starts) | (pos >= ends)] = -100
        ids[pos >= ends] = 0
        out.append((ids, labels))
    return out


def prepare_epoch(sol, ctx, spec):
    """Throughput, untimed: build the model, the data and the optimizer from seeds."""
    gen = torch.Generator().manual_seed(int(spec["data_seed"]))
    model = build_model(spec["model"])
    loader = make_loader(random_batches(gen, spec))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return {"model": model, "loader": loader, "optimizer": optimizer,
            "accum_steps": spec["accum_steps"]}


def timed_epoch(sol, ctx, state):
    """Throughput, timed from outside: one call of train_epoch."""
    losses = sol.train_epoch(state["model"], state["loader"], state["optimizer"],
                             state["accum_steps"])
    # A summary of the parameters, not the parameters: moving megabytes through the
    # protocol would be timed too and would hide the difference being measured.
    summary = [torch.stack([p.detach().double().sum(), p.detach().double().square().sum()])
               for p in state["model"].parameters()]
    return {"returned": losses, "final": _cpu(summary)}

