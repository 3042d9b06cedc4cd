"""warmup-cosine scenarios. This file runs INSIDE the sandbox, next to the submission, and
is public: read it to see exactly how your make_scheduler is called.

The grader sends plain data: the parameter groups' learning rates, the arguments and how
many steps to take. A scenario builds an optimizer (one parameter group per learning rate),
calls ``sol.make_scheduler(...)`` on it, runs a training loop's ``optimizer.step();
scheduler.step()`` and returns, for every step count s, every group's ``lr`` and what
``scheduler.get_last_lr()`` said. The resume scenarios save the optimizer's and the
scheduler's ``state_dict()`` with ``torch.save`` halfway, build everything again (a fresh
optimizer, ``make_scheduler`` on it, ``optimizer.load_state_dict``, then
``scheduler.load_state_dict`` with ``torch.load(..., weights_only=True)``) and go on.
"""

import io

import torch
from torch import nn

OPTIMIZERS = {"sgd": (torch.optim.SGD, {"momentum": 0.9}),
              "adamw": (torch.optim.AdamW, {"weight_decay": 0.01}),
              "adam": (torch.optim.Adam, {})}


def make_optimizer(spec):
    """An optimizer with one parameter group per entry of ``spec["lrs"]`` (each group its
    own small parameter), the groups' other options as a training script would set them."""
    cls, options = OPTIMIZERS[spec["name"]]
    groups = [{"params": [nn.Parameter(torch.zeros(3, dtype=torch.float64))], "lr": lr}
              for lr in spec["lrs"]]
    return cls(groups, **options)


def build(sol, optimizer, setup):
    """Call make_scheduler the way the setup says: positionally or with keywords, with or
    without min_lr_ratio (its default is 0.0)."""
    w, t, m = setup["warmup_steps"], setup["total_steps"], setup.get("min_lr_ratio")
    extra = {} if m is None else {"min_lr_ratio": m}
    if setup.get("keywords"):
        return sol.make_scheduler(optimizer, warmup_steps=w, total_steps=t, **extra)
    if m is None:
        return sol.make_scheduler(optimizer, w, t)
    return sol.make_scheduler(optimizer, w, t, m)


def lrs(optimizer):
    return [float(g["lr"]) for g in optimizer.param_groups]


def last_lr(scheduler):
    values = scheduler.get_last_lr()
    return [float(v) for v in values] if isinstance(values, list | tuple) else values


def train_step(optimizer, scheduler):
    """One step of a training loop: every parameter gets a gradient, the optimizer steps
    (so its state has something to save), then the scheduler."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = torch.ones_like(p)
    optimizer.step()
    scheduler.step()


class Record:
    """For each step count s: every group's lr and get_last_lr()."""

    def __init__(self):
        self.lr, self.last = [], []

    def add(self, optimizer, scheduler):
        self.lr.append(lrs(optimizer))
        self.last.append(last_lr(scheduler))


def describe(scheduler):
    return {"type": type(scheduler).__name__,
            "is_lr_scheduler": isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler)}


# ---------------------------------------------------------------- scenarios


def construct(sol, ctx, setup):
    """make_scheduler alone (the argument checks); returns what came back."""
    return describe(build(sol, make_optimizer(setup["optimizer"]), setup))


def schedule(sol, ctx, setup):
    """Learning rates for s = 0 .. setup["steps"], uninterrupted."""
    optimizer = make_optimizer(setup["optimizer"])
    scheduler = build(sol, optimizer, setup)
    record = Record()
    record.add(optimizer, scheduler)
    for _ in range(setup["steps"]):
        train_step(optimizer, scheduler)
        record.add(optimizer, scheduler)
    return {**describe(scheduler), "lr": record.lr, "last_lr": record.last}


def save(optimizer, scheduler):
    """Both state dicts through torch.save, as bytes (a uint8 tensor), or the error."""
    saved = {}
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler)):
        buffer = io.BytesIO()
        try:
            torch.save(obj.state_dict(), buffer)
        except Exception as e:  # the submission's state_dict() holds something unsaveable
            return {"error": f"torch.save({name}.state_dict()): {type(e).__name__}: {e}"[:400]}
        saved[name] = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
    return saved


def load(sol, setup, saved):
    """A fresh optimizer, make_scheduler on it, then both states loaded, in that order.
    Returns (optimizer, scheduler, None) or (None, None, the error)."""
    optimizer = make_optimizer(setup["optimizer"])
    scheduler = build(sol, optimizer, setup)
    states = {}
    for name in ("optimizer", "scheduler"):
        try:
            states[name] = torch.load(io.BytesIO(saved[name].numpy().tobytes()),
                                      weights_only=True)
        except Exception as e:  # something weights_only refuses to load
            return None, None, (f"torch.load({name} state, weights_only=True): "
                                f"{type(e).__name__}: {e}")[:400]
    optimizer.load_state_dict(states["optimizer"])
    scheduler.load_state_dict(states["scheduler"])
    return optimizer, scheduler, None


def resume(sol, ctx, setup):
    """Run ``setup["at"]`` steps, save, rebuild and load, then go on to ``setup["steps"]``.
    ``lr``/``last_lr`` cover s = 0 .. steps; the entry at s = at is read after loading."""
    optimizer = make_optimizer(setup["optimizer"])
    scheduler = build(sol, optimizer, setup)
    record = Record()
    record.add(optimizer, scheduler)
    for _ in range(setup["at"]):
        train_step(optimizer, scheduler)
        record.add(optimizer, scheduler)
    saved = save(optimizer, scheduler)
    if "error" in saved:
        return {"error": saved["error"]}
    del optimizer, scheduler
    optimizer, scheduler, error = load(sol, setup, saved)
    if error is not None:
        return {"error": error}
    record.lr.pop(), record.last.pop()
    record.add(optimizer, scheduler)
    for _ in range(setup["at"], setup["steps"]):
        train_step(optimizer, scheduler)
        record.add(optimizer, scheduler)
    return {"lr": record.lr, "last_lr": record.last}


def save_at(sol, ctx, setup):
    """The first process of a restart: run ``setup["at"]`` steps and return the saved
    states (bytes) for the next process."""
    optimizer = make_optimizer(setup["optimizer"])
    scheduler = build(sol, optimizer, setup)
    for _ in range(setup["at"]):
        train_step(optimizer, scheduler)
    return save(optimizer, scheduler)


def continue_from(sol, ctx, setup, saved):
    """The second process of a restart: load what save_at saved and go on to
    ``setup["steps"]``; ``lr``/``last_lr`` cover s = at .. steps."""
    optimizer, scheduler, error = load(sol, setup, saved)
    if error is not None:
        return {"error": error}
    record = Record()
    record.add(optimizer, scheduler)
    for _ in range(setup["at"], setup["steps"]):
        train_step(optimizer, scheduler)
        record.add(optimizer, scheduler)
    return {"lr": record.lr, "last_lr": record.last}
