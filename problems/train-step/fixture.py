"""train-step scenarios. This file runs INSIDE the sandbox, next to the submission, and is
public: read it to see exactly how your train_step is called and what is recorded.

The grader sends plain data (sizes, seeds, batches); ``train`` builds the model, the
optimizer and the scheduler from it and calls ``sol.train_step(...)`` once per planned step,
the way a training loop would, except that before some calls it does what a caller does:

- puts the model in eval mode (the caller has just evaluated);
- leaves gradients on every parameter (an earlier backward, say for a gradient-norm probe);
- switches the model's auxiliary head off, so that its parameters get no gradient in this
  step (like an expert that no token was routed to);
- makes the loss NaN or infinite, or one gradient infinite (a loss spike, an overflow).

It records, through hooks on the model, on the loss and on the optimizer:

- every forward (and which modules were in training mode), every backward through the loss;
- the order of ``zero_grad``, forward, backward, ``optimizer.step()``, ``scheduler.step()``;
- at the optimizer step: each parameter's gradient (``None`` kept as ``None``) and the
  learning rates; after it, the parameters;
- after the call: what it returned, the modules' modes, the parameters, buffers and
  gradients, the optimizer's state and the scheduler's.

The grader compares all of it with the reference solution run on the same inputs.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """Linear -> BatchNorm -> Tanh -> Dropout, then a head, plus an auxiliary head whose
    output is added only while ``use_aux`` is True."""

    def __init__(self, d, h, o, dropout):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.norm = nn.BatchNorm1d(h)
        self.act = nn.Tanh()
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(h, o)
        self.aux = nn.Linear(h, o)
        self.use_aux = True

    def forward(self, x):
        z = self.drop(self.act(self.norm(self.fc1(x))))
        out = self.head(z)
        if self.use_aux:
            out = out + self.aux(z)
        return out


def build_model(spec):
    """The model, its parameters drawn from a generator seeded with ``spec["seed"]`` (the
    global RNG is neither used nor changed), float64."""
    d, h, o = spec["sizes"]
    with torch.device("meta"):  # shapes only: no default initialisation
        model = Net(d, h, o, spec.get("dropout", 0.0))
    model = model.to_empty(device="cpu").double()
    gen = torch.Generator().manual_seed(int(spec["seed"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=p.dtype)
            if name.startswith("norm."):
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                p.copy_(noise / p.shape[1] ** 0.5)
    model.norm.reset_running_stats()
    return model


OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def make_optimizer(model, spec):
    spec = dict(spec)
    return OPTIMIZERS[spec.pop("name")](model.parameters(), **spec)


def make_scheduler(optimizer, spec):
    if spec is None:
        return None
    if spec["name"] == "step":
        return torch.optim.lr_scheduler.StepLR(optimizer, spec["step_size"], spec["gamma"])
    if spec["name"] == "warmup":
        warmup = spec["warmup"]
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    raise ValueError(f"unknown scheduler {spec['name']!r}")


def stale_gradients(model, seed):
    """Gradients a caller left on every parameter before the call."""
    gen = torch.Generator().manual_seed(int(seed))
    return [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in model.parameters()]


def _copy(tensors):
    return [None if t is None else t.detach().clone() for t in tensors]


def _modes(model):
    return [m.training for m in model.modules()]


class Probe:
    """Hooks that record what one train_step call does (see the module docstring)."""

    def __init__(self, model, optimizer, scheduler):
        self.model, self.optimizer = model, optimizer
        self.params = list(model.parameters())
        self.poison = None
        self.reset()
        model.register_forward_pre_hook(self.on_forward)
        optimizer.register_step_pre_hook(self.before_step)
        optimizer.register_step_post_hook(self.after_step)
        # A gradient made infinite on its way into fc1.weight (an overflow in backward).
        model.fc1.weight.register_hook(
            lambda g: g * math.inf if self.poison == "inf_grad" else g)
        self.log_calls(optimizer, "zero_grad", "zero_grad")
        self.log_calls(model, "zero_grad", "zero_grad")
        if scheduler is not None:
            self.log_calls(scheduler, "step", "scheduler.step")

    def reset(self):
        self.order, self.forwards, self.steps, self.backwards = [], [], [], 0

    def log_calls(self, obj, method, name):
        inner = getattr(obj, method)

        def logged(*args, **kwargs):
            self.order.append(name)
            return inner(*args, **kwargs)

        setattr(obj, method, logged)

    def on_forward(self, module, args):
        self.order.append("forward")
        self.forwards.append(_modes(self.model))

    def on_backward(self, grad):
        self.order.append("backward")
        self.backwards += 1

    def before_step(self, optimizer, args, kwargs):
        self.order.append("step")
        self.steps.append({"grads": _copy(p.grad for p in self.params),
                           "lr": [float(g["lr"]) for g in optimizer.param_groups]})

    def after_step(self, optimizer, args, kwargs):
        self.steps[-1]["params"] = _copy(self.params)

    def loss_fn(self, kind):
        """The loss_fn handed to train_step: a batch-mean MSE or cross-entropy, poisoned on
        planned steps, with a hook that counts the backward passes through it."""

        def loss_fn(output, target):
            loss = (F.mse_loss if kind == "mse" else F.cross_entropy)(output, target)
            if self.poison == "nan_loss":
                loss = loss * math.nan
            elif self.poison == "inf_loss":
                loss = loss * math.inf
            if loss.requires_grad:
                loss.register_hook(self.on_backward)
            return loss

        return loss_fn


def optimizer_state(optimizer):
    """A copy of the optimizer's per-parameter state (momentum buffers, Adam moments, step
    counts). A copy: state_dict() holds the live tensors, which later steps change."""
    return {int(k): {name: v.detach().clone() if isinstance(v, torch.Tensor) else v
                     for name, v in state.items()}
            for k, state in optimizer.state_dict()["state"].items()}


def train(sol, ctx, setup):
    """Call ``sol.train_step`` once per entry of ``setup["steps"]`` and record each call.

    ``setup``: model (sizes, dropout, seed), optimizer, scheduler (or None), loss ("mse" or
    "cross_entropy"), max_grad_norm (or None), steps: a list of {x, y, seed, aux, eval,
    stale (a seed or None), poison (None, "nan_loss", "inf_loss" or "inf_grad")}.
    """
    model = build_model(setup["model"])
    model.train()
    optimizer = make_optimizer(model, setup["optimizer"])
    scheduler = make_scheduler(optimizer, setup.get("scheduler"))
    probe = Probe(model, optimizer, scheduler)
    loss_fn = probe.loss_fn(setup["loss"])
    # Options are passed only when set, as a training script would.
    options = {}
    if setup.get("max_grad_norm") is not None:
        options["max_grad_norm"] = setup["max_grad_norm"]
    if scheduler is not None:
        options["scheduler"] = scheduler
    calls = []
    for plan in setup["steps"]:
        if plan.get("eval"):
            model.eval()
        if plan.get("stale") is not None:
            for p, g in zip(model.parameters(), stale_gradients(model, plan["stale"]),
                            strict=True):
                p.grad = g
        model.use_aux = plan.get("aux", True)
        probe.reset()
        probe.poison = plan.get("poison")
        torch.manual_seed(int(plan["seed"]))  # the dropout masks of this step
        returned = sol.train_step(model, (plan["x"], plan["y"]), optimizer, loss_fn, **options)
        probe.poison = None
        calls.append({
            "returned": returned, "forwards": probe.forwards, "backwards": probe.backwards,
            "order": probe.order, "steps": probe.steps, "modes": _modes(model),
            "params": _copy(model.parameters()), "buffers": _copy(model.buffers()),
            "grads": _copy(p.grad for p in model.parameters()),
            "optimizer": optimizer_state(optimizer),
            "scheduler": None if scheduler is None else {
                "last_epoch": scheduler.last_epoch,
                "lr": [float(g["lr"]) for g in optimizer.param_groups]},
        })
    return calls


def first_norm(sol, ctx, setup):
    """The total gradient norm of the first planned step (the grader picks max_grad_norm
    from it). Computed here, without the submission."""
    model = build_model(setup["model"])
    model.train()
    plan = setup["steps"][0]
    model.use_aux = plan.get("aux", True)
    torch.manual_seed(int(plan["seed"]))
    output = model(plan["x"])
    loss = (F.mse_loss if setup["loss"] == "mse" else F.cross_entropy)(output, plan["y"])
    loss.backward()
    grads = [p.grad.reshape(-1) for p in model.parameters() if p.grad is not None]
    return float(torch.cat(grads).norm())
