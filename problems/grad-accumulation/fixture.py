"""Scenarios for grad-accumulation. This file runs INSIDE the sandbox, next to the
submission, and is public: read it to see exactly how your train_epoch is called.

The grader sends plain data (sizes, seeds, tensors it generated); a scenario builds the
model, the DataLoader, the optimizer and the scheduler from it, calls
``sol.train_epoch(...)`` and returns plain data. To see what happened inside the call it
records, through the optimizer's step hooks and a wrapper around ``scheduler.step``:

- at every optimizer step: the gradients the step is about to use (after any clipping) and
  the learning rate; after it: the parameters;
- the order of ``optimizer.zero_grad()``, ``optimizer.step()`` and ``scheduler.step()``.

The grader compares all of it with the reference solution run on the same inputs. The
helpers that build models, loaders and optimizers are shared with the grader (tests.py),
so both sides build identical objects.
"""

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

# ---------------------------------------------------------------- building blocks


def build_model(spec, device="cpu"):
    """A small model without dropout or batch norm, its parameters drawn from a generator
    seeded with ``spec["seed"]`` (the global RNG is neither used nor changed). The values
    come from a CPU generator, so the grader rebuilds the same model; a throughput model
    (``"init_on_device"``) draws them on the device instead, which is faster."""
    with torch.device("meta"):  # shapes only: no memory, no default initialisation
        model = nn.Sequential(OrderedDict(_layers(spec["kind"], spec.get("sizes"))))
    dtype = getattr(torch, spec.get("dtype", "float64"))
    model = model.to_empty(device=device).to(dtype)
    init_device = device if spec.get("init_on_device") else "cpu"
    gen = torch.Generator(device=init_device).manual_seed(int(spec["seed"]))

    def randn(shape):
        return torch.randn(shape, generator=gen, dtype=dtype, device=init_device)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                value = 0.1 * randn(p.shape)
            elif "norm" in name:
                value = 1.0 + 0.1 * randn(p.shape)
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 1
                value = randn(p.shape) / fan_in**0.5
            p.copy_(value)
        for p, value in zip(model.parameters(), spec.get("init") or [], strict=False):
            p.copy_(value)
    return model


def _layers(kind, sizes):
    if kind == "scalar":  # y = w * x, the worked example of the statement
        return [("fc", nn.Linear(1, 1, bias=False))]
    if kind == "mlp":
        d, h, o = sizes
        return [("fc1", nn.Linear(d, h)), ("act1", nn.Tanh()), ("fc2", nn.Linear(h, h)),
                ("act2", nn.GELU()), ("out", nn.Linear(h, o))]
    if kind == "layernorm":
        d, h, o = sizes
        return [("fc1", nn.Linear(d, h)), ("norm", nn.LayerNorm(h)), ("act", nn.SiLU()),
                ("out", nn.Linear(h, o))]
    if kind == "conv":
        c, length, h, o = sizes
        return [("conv", nn.Conv1d(c, h, 3, padding=1)), ("act", nn.Tanh()),
                ("flat", nn.Flatten()), ("out", nn.Linear(h * length, o))]
    if kind == "embedding":
        vocab, h, o = sizes
        return [("emb", nn.EmbeddingBag(vocab, h, mode="mean")), ("act", nn.Tanh()),
                ("out", nn.Linear(h, o))]
    if kind == "deep":  # the throughput model: several equal layers
        d, h, depth, o = sizes
        layers = [("inp", nn.Linear(d, h))]
        for i in range(depth):
            layers += [(f"act{i}", nn.Tanh()), (f"fc{i}", nn.Linear(h, h))]
        return [*layers, ("out", nn.Linear(h, o))]
    raise ValueError(f"unknown model kind {kind!r}")


class SliceDataset(Dataset):
    """Samples ``(x[i], y[i])``. make_loader's micro-batches are consecutive indices, so
    one is fetched as a slice: no copy, and no device synchronisation."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __getitems__(self, indices):
        start, end = indices[0], indices[-1] + 1
        return self.x[start:end], self.y[start:end]


def as_batch(batch):
    """collate_fn: the dataset already returns the micro-batch ``(x, y)``."""
    return batch


def make_loader(x, y, batch_sizes):
    """A DataLoader over consecutive micro-batches of the given (unequal) sizes;
    ``len(loader) == len(batch_sizes)``."""
    starts = [sum(batch_sizes[:i]) for i in range(len(batch_sizes))]
    batches = [list(range(s, s + n)) for s, n in zip(starts, batch_sizes, strict=True)]
    return DataLoader(SliceDataset(x, y), batch_sampler=batches, collate_fn=as_batch)


def sum_mse(output, target):
    """Sum over the micro-batch of each sample's squared error."""
    return F.mse_loss(output, target, reduction="sum")


def sum_cross_entropy(output, target):
    """Sum over the micro-batch of each sample's cross-entropy."""
    return F.cross_entropy(output, target, reduction="sum")


LOSSES = {"mse": sum_mse, "cross_entropy": sum_cross_entropy}


def make_optimizer(model, spec):
    spec = dict(spec)
    name = spec.pop("name")
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    return cls(model.parameters(), **spec)


def make_scheduler(optimizer, spec):
    if spec is None:
        return None
    if spec["name"] == "step":
        return torch.optim.lr_scheduler.StepLR(optimizer, spec["step_size"], spec["gamma"])
    if spec["name"] == "warmup":
        warmup = spec["warmup"]
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min(1.0, (step + 1) / warmup) * 0.9 ** max(0, step - warmup))
    raise ValueError(f"unknown scheduler {spec['name']!r}")


def stale_gradients(model, seed):
    """Gradients left on the parameters before train_epoch is called (say, by a previous
    epoch whose loop zeroes at the start of a window, or by an evaluation backward)."""
    gen = torch.Generator().manual_seed(int(seed))
    return [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in model.parameters()]


def _cpu(tensors):
    return [None if t is None else t.detach().to("cpu", copy=True) for t in tensors]


class Recorder:
    """Records what the optimizer and the scheduler were asked to do."""

    def __init__(self, model, optimizer, scheduler):
        self.params = list(model.parameters())
        self.steps = []
        self.calls = []
        optimizer.register_step_pre_hook(self.before_step)
        optimizer.register_step_post_hook(self.after_step)
        zero_grad = optimizer.zero_grad

        def logged_zero_grad(*args, **kwargs):
            self.calls.append("zero_grad")
            return zero_grad(*args, **kwargs)

        optimizer.zero_grad = logged_zero_grad
        if scheduler is not None:
            scheduler_step = scheduler.step

            def logged_scheduler_step(*args, **kwargs):
                self.calls.append("scheduler.step")
                return scheduler_step(*args, **kwargs)

            scheduler.step = logged_scheduler_step

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

    ``setup``: model (a build_model spec), x, y, batch_sizes, loss ("mse" or
    "cross_entropy"), accum_steps, optimizer, and optionally scheduler, max_grad_norm,
    stale_grads (a seed), epochs (default 1) and device (default "cpu").
    """
    device = setup.get("device", "cpu")
    model = build_model(setup["model"], device)
    model.train()
    loader = make_loader(setup["x"].to(device), setup["y"].to(device), setup["batch_sizes"])
    optimizer = make_optimizer(model, setup["optimizer"])
    scheduler = make_scheduler(optimizer, setup.get("scheduler"))
    recorder = Recorder(model, optimizer, scheduler)
    if setup.get("stale_grads") is not None:
        for p, g in zip(model.parameters(), stale_gradients(model, setup["stale_grads"]),
                        strict=True):
            p.grad = g.to(device)
    # Options are passed only when set, as a training script would.
    options = {}
    if setup.get("max_grad_norm") is not None:
        options["max_grad_norm"] = setup["max_grad_norm"]
    if scheduler is not None:
        options["scheduler"] = scheduler
    returned = []
    for _ in range(setup.get("epochs", 1)):
        returned.append(sol.train_epoch(model, loader, optimizer, LOSSES[setup["loss"]],
                                        setup["accum_steps"], **options))
    return {"returned": returned, "steps": recorder.steps, "calls": recorder.calls,
            "final": _cpu(model.parameters())}


class HostDataset(Dataset):
    """The throughput data, as a real pipeline holds it: 8-bit features in host memory.
    Fetching a micro-batch gathers its (shuffled) rows and converts and normalises them on
    the CPU; on a GPU it then pins them and starts an asynchronous copy. That CPU work per
    micro-batch is what a loop without host syncs overlaps with the GPU's work."""

    def __init__(self, x, y, device, dtype):
        self.x, self.y, self.device, self.dtype = x, y, device, dtype

    def __len__(self):
        return len(self.x)

    def __getitems__(self, indices):
        index = torch.as_tensor(indices)
        x = self.x.index_select(0, index).to(self.dtype).sub_(127.5).div_(64.0)
        y = self.y.index_select(0, index)
        if self.device != "cpu":
            x = x.pin_memory().to(self.device, non_blocking=True)
            y = y.pin_memory().to(self.device, non_blocking=True)
        return x, y


def prepare_epoch(sol, ctx, spec):
    """Throughput, untimed: build the model, the data (from seeds: nothing large crosses
    the protocol), a shuffled loader of unequal micro-batches and the optimizer."""
    device = spec["device"]
    dtype = getattr(torch, spec["model"]["dtype"])
    model = build_model(spec["model"], device)
    d, o = spec["model"]["sizes"][0], spec["model"]["sizes"][-1]
    n = sum(spec["batch_sizes"])
    gen = torch.Generator().manual_seed(int(spec["data_seed"]))
    x = torch.randint(0, 256, (n, d), generator=gen, dtype=torch.uint8)
    y = torch.randn(n, o, generator=gen, dtype=dtype)
    order = torch.randperm(n, generator=gen).tolist()
    batches, start = [], 0
    for size in spec["batch_sizes"]:
        batches.append(order[start:start + size])
        start += size
    loader = DataLoader(HostDataset(x, y, device, dtype), batch_sampler=batches,
                        collate_fn=as_batch)
    optimizer = torch.optim.SGD(model.parameters(), lr=spec["lr"], momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.7)
    if device == "cuda":
        torch.cuda.synchronize()
    return {"model": model, "loader": loader, "optimizer": optimizer, "scheduler": scheduler,
            "accum_steps": spec["accum_steps"], "max_grad_norm": spec["max_grad_norm"]}


def timed_epoch(sol, ctx, state):
    """Throughput, timed from outside: one call of train_epoch."""
    losses = sol.train_epoch(state["model"], state["loader"], state["optimizer"], sum_mse,
                             state["accum_steps"], max_grad_norm=state["max_grad_norm"],
                             scheduler=state["scheduler"])
    # A summary of the parameters, not the parameters: moving megabytes through the
    # protocol would be timed too and would hide the difference being measured.
    summary = [torch.stack([p.detach().double().sum(), p.detach().double().square().sum()])
               for p in state["model"].parameters()]
    return {"returned": losses, "final": _cpu(summary)}
