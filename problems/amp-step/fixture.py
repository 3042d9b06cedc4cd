"""Scenarios for amp-step. This file runs INSIDE the sandbox, next to the submission, and
is public: read it to see exactly how your amp_train_step is called.

The grader sends plain data (batches, sizes, seeds, the scaler's settings, which steps to
poison); ``train`` builds the model (float32 parameters), the optimizer, the scheduler and
a ``torch.amp.GradScaler``, and calls ``sol.amp_train_step(...)`` once per batch. On the
steps the grader chose it **injects a non-finite gradient**: a hook on one parameter (or
on the model's output) turns one element of the gradient into inf or NaN during your
backward pass, as an overflow in half precision would. After every call it records:

- what the call returned, and the model's parameters, the optimizer's state, the scaler's
  scale and growth tracker, the learning rates, and every submodule's ``training`` flag;
- the gradients the optimizer step used (through the optimizer's step pre-hook), when it
  stepped;
- whether autocast was on, and with which dtype, when the model's forward and the loss
  function ran;
- the order of the calls made on the scaler (``scale``, ``unscale_``, ``step``,
  ``update``), the optimizer (``step``, directly or by ``scaler.step``) and the scheduler.

The grader compares all of it with the reference solution's run on the same inputs.
"""

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

POISONS = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def autocast_state(device_type):
    """(enabled, dtype) of autocast for ``device_type`` right now (dtype None when off)."""
    try:
        enabled = torch.is_autocast_enabled(device_type)
        dtype = torch.get_autocast_dtype(device_type)
    except (TypeError, AttributeError):  # torch < 2.4 has one function per device
        if device_type == "cpu":
            enabled, dtype = torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype()
        else:
            enabled, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()
    return {"enabled": bool(enabled), "dtype": str(dtype).replace("torch.", "") if enabled
            else None}


def make_scaler(spec, device_type):
    """The GradScaler the caller makes; ``torch.amp.GradScaler(device_type, ...)``."""
    return torch.amp.GradScaler(device_type, init_scale=spec["init_scale"],
                                growth_factor=spec.get("growth_factor", 2.0),
                                backoff_factor=spec.get("backoff_factor", 0.5),
                                growth_interval=spec.get("growth_interval", 2000),
                                enabled=spec.get("enabled", True))


def cpu_scaler_supported():
    """Whether this torch has a GradScaler for the CPU (torch >= 2.3)."""
    try:
        scaler = make_scaler({"init_scale": 2.0}, "cpu")
        p = nn.Parameter(torch.ones(1))
        optimizer = torch.optim.SGD([p], lr=0.0)
        scaler.scale(p.sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        return True
    except Exception:
        return False


class Net(nn.Module):
    """The model: an MLP (or y = w·x, the statement's example). Its forward records the
    autocast state it ran under, and can poison its output's gradient."""

    def __init__(self, spec):
        super().__init__()
        kind = spec["kind"]
        if kind == "scalar":
            self.body = nn.Sequential(OrderedDict([("fc", nn.Linear(1, 1, bias=False))]))
        else:
            d, h, o = spec["sizes"]
            self.body = nn.Sequential(OrderedDict([
                ("fc1", nn.Linear(d, h)), ("act", nn.GELU()), ("fc2", nn.Linear(h, h)),
                ("norm", nn.LayerNorm(h)), ("out", nn.Linear(h, o))]))
        # A branch that the forward never uses (a frozen head, a tied or pruned layer): its
        # gradient stays None when gradients are cleared with set_to_none=True.
        self.spare = nn.Linear(2, 2) if spec.get("spare") else None
        self.device_type = "cpu"
        self.seen = []  # autocast state at each forward
        self.poison = None  # (value) to put into the output's gradient, if armed

    def forward(self, x):
        self.seen.append(autocast_state(self.device_type))
        out = self.body(x)
        self.seen[-1]["out_dtype"] = str(out.dtype).replace("torch.", "")
        if self.poison is not None and out.requires_grad:
            value = self.poison

            def poison(grad):
                grad = grad.clone()
                grad.view(-1)[0] = value
                return grad

            out.register_hook(poison)
        return out


def build_model(spec, device="cpu"):
    """Parameters in float32, drawn from a CPU generator seeded with ``spec["seed"]``."""
    model = Net(spec)
    gen = torch.Generator().manual_seed(int(spec["seed"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            value = torch.randn(p.shape, generator=gen)
            if name.endswith("bias"):
                value = 0.1 * value
            elif "norm" in name:
                value = 1.0 + 0.1 * value
            else:
                value = value / p.shape[-1] ** 0.5
            p.copy_(value)
        for p, value in zip(model.parameters(), spec.get("init") or [], strict=False):
            p.copy_(value)
    model.device_type = torch.device(device).type
    return model.to(device).train()


class LossFn:
    """The loss_fn handed to amp_train_step: mean MSE or cross-entropy, recording the
    autocast state it was called under."""

    def __init__(self, kind, device_type):
        self.kind, self.device_type, self.seen = kind, device_type, []

    def __call__(self, output, target):
        self.seen.append(autocast_state(self.device_type))
        if self.kind == "cross_entropy":
            return F.cross_entropy(output, target)
        return F.mse_loss(output, target)


def make_optimizer(model, spec):
    spec = dict(spec)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
           "adamw": torch.optim.AdamW}[spec.pop("name")]
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


def _cpu(t):
    return None if t is None else t.detach().to("cpu", copy=True)


def _data(value):
    """A returned value as the protocol carries it (anything else becomes its repr)."""
    if value is None or isinstance(value, bool | int | float | str | torch.Tensor):
        return _cpu(value) if isinstance(value, torch.Tensor) else value
    if isinstance(value, tuple | list):
        return {"sequence": type(value).__name__, "items": [_data(v) for v in value]}
    return {"type": type(value).__name__, "repr": repr(value)[:80]}


class Recorder:
    """Logs the calls made on the scaler, the optimizer and the scheduler (top-level ones:
    ``scaler.step`` calls ``unscale_`` and ``optimizer.step`` itself, which are logged as
    made by it), and the gradients each optimizer step used."""

    def __init__(self, model, optimizer, scaler, scheduler):
        self.params = list(model.parameters())
        self.calls, self.grads, self.depth = [], None, 0
        for name in ("scale", "unscale_", "step", "update"):
            setattr(scaler, name, self.logged(f"scaler.{name}", getattr(scaler, name)))
        if scheduler is not None:
            scheduler.step = self.logged("scheduler.step", scheduler.step)
        optimizer.register_step_pre_hook(self.before_step)

    def logged(self, name, method):
        def call(*args, **kwargs):
            if self.depth == 0:
                self.calls.append(name)
            self.depth += 1
            try:
                return method(*args, **kwargs)
            finally:
                self.depth -= 1

        return call

    def before_step(self, optimizer, args, kwargs):
        self.calls.append("optimizer.step" if self.depth == 0 else "optimizer.step by scaler")
        self.grads = [_cpu(p.grad) for p in self.params]


def arm(model, poison):
    """Inject a non-finite value into one element of a gradient during the next backward:
    of one parameter (``poison["param"]``, an index into model.parameters()) or of the
    model's output (which reaches every parameter's gradient)."""
    if poison is None:
        return None
    value = POISONS[poison["value"]]
    if poison.get("param") is None:
        model.poison = value
        return None
    param = list(model.parameters())[poison["param"]]
    index = poison.get("index", 0) % param.numel()

    def hook(grad):
        grad = grad.clone()
        grad.view(-1)[index] = value
        return grad

    return param.register_hook(hook)


def optimizer_state(optimizer):
    """The optimizer's per-parameter state (None for a parameter without any), in
    model.parameters() order, with CPU copies of its tensors (a state dict holds the live
    ones)."""
    state = optimizer.state_dict()["state"]
    count = sum(len(group["params"]) for group in optimizer.param_groups)
    return [{k: _cpu(v) if isinstance(v, torch.Tensor) else v for k, v in state[i].items()}
            if i in state else None for i in range(count)]


def train(sol, ctx, setup):
    """Build everything from ``setup`` and call ``sol.amp_train_step`` once per step.

    ``setup``: model (kind, sizes, seed, spare?, init?), steps (a list of {x, y, poison}),
    loss ("mse" or "cross_entropy"), optimizer, scheduler, scaler (GradScaler settings),
    max_grad_norm, device, dtype (passed with device_type unless ``defaults``), and
    optionally stale_grads (a seed for gradients left before the first call).
    """
    device = setup.get("device", "cpu")
    device_type = torch.device(device).type
    model = build_model(setup["model"], device)
    optimizer = make_optimizer(model, setup["optimizer"])
    scheduler = make_scheduler(optimizer, setup.get("scheduler"))
    scaler = make_scaler(setup["scaler"], device_type)
    loss_fn = LossFn(setup.get("loss", "mse"), device_type)
    recorder = Recorder(model, optimizer, scaler, scheduler)
    if setup.get("stale_grads") is not None:
        # What an earlier scaled backward would have left: gradients times the scale.
        gen = torch.Generator().manual_seed(int(setup["stale_grads"]))
        scale = setup["scaler"]["init_scale"] if setup["scaler"].get("enabled", True) else 1.0
        for p in model.parameters():
            p.grad = (torch.randn(p.shape, generator=gen) * scale).to(device)
    options = {}
    if setup.get("max_grad_norm") is not None:
        options["max_grad_norm"] = setup["max_grad_norm"]
    if scheduler is not None:
        options["scheduler"] = scheduler
    if not setup.get("defaults"):
        options["device_type"] = device_type
        options["dtype"] = getattr(torch, setup.get("dtype", "bfloat16"))
    records = []
    for step in setup["steps"]:
        model.seen.clear()
        loss_fn.seen.clear()
        recorder.calls.clear()
        recorder.grads = None
        handle = arm(model, step.get("poison"))
        try:
            returned = sol.amp_train_step(model, (step["x"].to(device), step["y"].to(device)),
                                          optimizer, scaler, loss_fn, **options)
        finally:
            model.poison = None
            if handle is not None:
                handle.remove()
        records.append({
            "returned": _data(returned),
            "params": [_cpu(p) for p in model.parameters()],
            "optimizer": optimizer_state(optimizer),
            "scaler": {k: v for k, v in scaler.state_dict().items()
                       if k in ("scale", "_growth_tracker")},
            "lr": [float(g["lr"]) for g in optimizer.param_groups],
            "training": all(m.training for m in model.modules()),
            "forward": list(model.seen), "loss_fn": list(loss_fn.seen),
            "calls": list(recorder.calls), "grads": recorder.grads,
        })
    return records
