"""evaluate scenarios. This file runs INSIDE the sandbox, next to the submission, and is
public: read it to see exactly how your evaluate is called and what is recorded.

The grader sends plain data (sizes, seeds, the batches); ``evaluate`` builds the model,
sets every module's mode the way a training loop had left it (by default the classifier
trains while a pretrained encoder stays frozen in eval mode), plants gradients a training
step left on the trainable parameters, wraps the batches in the kind of loader asked for
(a one-shot generator, a list, a DataLoader) and calls ``sol.evaluate(model, loader,
loss_fn)``. It records, through a forward hook and the loss_fn it hands over:

- every forward, and which modules were in training mode during it;
- every loss_fn call: its batch size, and whether its input required grad (an autograd
  graph was being built) — False under torch.no_grad() and torch.inference_mode();

and after the call: what came back, every module's mode, the parameters, buffers and
gradients. The grader compares all of it with the reference solution's on the same inputs.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """A pretrained encoder (frozen: no gradients) and a classifier, both with BatchNorm
    and Dropout, so that the mode matters."""

    def __init__(self, d, h, c, dropout):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, h), nn.BatchNorm1d(h), nn.Tanh(),
                                     nn.Dropout(dropout))
        self.head = nn.Sequential(nn.Linear(h, h), nn.BatchNorm1d(h), nn.ReLU(),
                                  nn.Dropout(dropout), nn.Linear(h, c))
        self.encoder.requires_grad_(False)

    def forward(self, x):
        return self.head(self.encoder(x))


def build_model(spec, device="cpu"):
    """The model, drawn from a generator seeded with ``spec["seed"]`` (the global RNG is
    neither used nor changed), in ``spec["dtype"]`` (float64 unless said), with running
    statistics of its own, as a trained model has."""
    d, h, c = spec["sizes"]
    with torch.device("meta"):  # shapes only: no default initialisation
        model = Net(d, h, c, spec.get("dropout", 0.3))
    dtype = getattr(torch, spec.get("dtype", "float64"))
    model = model.to_empty(device=device).to(dtype)
    gen = torch.Generator().manual_seed(int(spec["seed"]))

    def randn(shape):
        return torch.randn(shape, generator=gen, dtype=dtype).to(device)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # biases and BatchNorm's affine parameters
                p.copy_((1.0 if name.endswith("1.weight") else 0.0) + 0.2 * randn(p.shape))
            else:
                p.copy_(randn(p.shape) / p.shape[1] ** 0.5)
        for norm in (model.encoder[1], model.head[1]):
            norm.running_mean.copy_(0.3 * randn(norm.running_mean.shape))
            norm.running_var.copy_(0.5 + randn(norm.running_var.shape).abs())
            norm.num_batches_tracked.fill_(int(spec["seed"]) % 1000 + 1)
    return model


def set_modes(model, modes):
    """Each module's own flag, ``model.modules()`` order (not ``.train()``, which recurses);
    ``None``: the classifier trains and the encoder stays frozen in eval mode."""
    if modes is None:
        model.train()
        model.encoder.eval()
        return
    for module, training in zip(model.modules(), modes, strict=True):
        module.training = bool(training)


def caller_gradients(model, seed):
    """Gradients the last training step left on the trainable parameters."""
    gen = torch.Generator().manual_seed(int(seed))
    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.randn(p.shape, generator=gen, dtype=p.dtype).to(p.device)


def make_loader(kind, batches):
    """``batches`` as the loader the case asks for."""
    if kind == "generator":  # one pass only, and no len()
        return (batch for batch in batches)
    if kind == "list":
        return list(batches)
    if kind == "dataloader":
        xs = torch.cat([x for x, _ in batches]) if batches else torch.zeros(0)
        ys = torch.cat([y for _, y in batches]) if batches else torch.zeros(0)
        dataset = torch.utils.data.TensorDataset(xs, ys)
        starts = [sum(len(y) for _, y in batches[:i]) for i in range(len(batches))]
        sampler = [list(range(s, s + len(y))) for s, (_, y) in zip(starts, batches, strict=True)]
        return torch.utils.data.DataLoader(dataset, batch_sampler=sampler)
    raise ValueError(f"unknown loader kind {kind!r}")


def _copy(tensors):
    return [None if t is None else t.detach().clone() for t in tensors]


def _modes(model):
    return [m.training for m in model.modules()]


# ---------------------------------------------------------------- scenarios


def evaluate(sol, ctx, setup):
    """Build the model and the loader from ``setup`` and call ``sol.evaluate`` once.

    ``setup``: model (sizes, dropout, seed), batches (a list of (x, y)), loader
    ("generator", "list" or "dataloader"), modes (None or one flag per module), grads (a
    seed for the caller's gradients, or None), seed (the global RNG's, for dropout).
    """
    model = build_model(setup["model"])
    set_modes(model, setup.get("modes"))
    if setup.get("grads") is not None:
        caller_gradients(model, setup["grads"])
    forwards, calls = [], []
    model.register_forward_pre_hook(lambda module, args: forwards.append(_modes(model)))

    def loss_fn(output, target):
        calls.append({"n": int(target.shape[0]), "requires_grad": bool(output.requires_grad)})
        return F.cross_entropy(output, target)

    torch.manual_seed(int(setup.get("seed", 0)))  # dropout, were it left on
    returned = sol.evaluate(model, make_loader(setup["loader"], setup["batches"]), loss_fn)
    return {"returned": returned, "forwards": forwards, "loss_calls": calls,
            "modes": _modes(model), "params": _copy(model.parameters()),
            "buffers": _copy(model.buffers()), "grads": _copy(p.grad for p in model.parameters())}


def logits(sol, ctx, setup):
    """The model's outputs on the setup's batches in eval mode (the grader labels some
    batches from them: every prediction right, or every one wrong). Without the submission."""
    model = build_model(setup["model"]).eval()
    with torch.no_grad():
        return [model(x) for x, _ in setup["batches"]]


def prepare_pass(sol, ctx, spec):
    """Throughput, untimed: a float32 model and many small batches, built from seeds."""
    model = build_model(spec["model"])
    set_modes(model, None)
    d, _, c = spec["model"]["sizes"]
    gen = torch.Generator().manual_seed(int(spec["data_seed"]))
    batches = [(torch.randn(n, d, generator=gen), torch.randint(0, c, (n,), generator=gen))
               for n in spec["batch_sizes"]]
    return {"model": model, "batches": batches}


def timed_pass(sol, ctx, state):
    """Throughput, timed from outside: one evaluate over a one-shot iterable."""
    batches = state["batches"]
    return sol.evaluate(state["model"], (b for b in batches), F.cross_entropy)
