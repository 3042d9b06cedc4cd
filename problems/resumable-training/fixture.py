"""resumable-training scenarios: they run INSIDE the sandbox, next to the submission (public).

Every process the judge starts builds the same ``setup`` from plain data (a seed and sizes),
so a process that is killed and started again sees exactly the objects that the first one
saw. While a scenario watches a checkpoint folder, this module

* asks the judge after every ``setup.log(step, loss)`` whether to go on; the judge answers,
  or SIGKILLs the process instead ("killed right after step 13");
* replaces ``torch.save`` (at import, before the submission is imported, so that
  ``from torch import save`` gets it too): it serialises to memory, writes part of the bytes
  to the destination (a path or a file object), flushes, asks the judge, and writes the rest
  only if the judge answers ("killed in the middle of writing a checkpoint");
* asks the judge before every file in the folder is opened for writing, renamed, truncated
  or removed (an audit hook), and after every ``os.replace``/``os.rename`` into it, so that
  the judge can measure the folder from outside at each change and kill right after a
  checkpoint was committed.

The judge's answers carry nothing: what it plans to do is never sent here. Nothing returned
from here is trusted either; the judge compares it with the reference's run.

Limitation: these hooks run in the submission's own process, and a determined submission can
get around them (the original ``torch.save`` is kept in a closure, not in this module's globals,
but ``torch.serialization``'s internals, ctypes or this module's state remain within reach). So
the judge does not rely on them where it can avoid it: it measures the folder from outside, and
a case that plans a kill in the middle of a checkpoint write (or right after one) fails when no
such write is ever announced, instead of passing without the kill (tests.py,
``Follow.decide``). What it cannot see is a write announced for a decoy file while the real
checkpoint is written around the hooks.
"""

import contextlib
import functools
import hashlib
import io
import math
import numbers
import os
import random
import sys
import threading

import numpy as np
import torch

# Every optimizer's constructor imports torch._dynamo (about a second): import it with the
# fixture, before the judge's clock runs, rather than inside the first step.
import torch._dynamo
from torch import nn
from torch.utils.data import DataLoader, Dataset

NOISE = 0.1  # the scale of the NumPy noise added to every sample


# ---------------------------------------------------------------- the objects of a run


class Setup:
    """What train() gets: see the statement."""

    def __init__(self, model, optimizer, scheduler, make_loader, loss_fn, log,
                 checkpoint_every):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.make_loader = make_loader
        self.loss_fn = loss_fn
        self.log = log
        self.checkpoint_every = checkpoint_every

    def __repr__(self):
        return f"Setup(checkpoint_every={self.checkpoint_every}, model={self.model})"


class Trace:
    """What the judge's diagnosis needs: the samples loaded, and per forward pass the batch,
    the RNG draws that augmented it, the torch RNG state, the parameters it saw and whether
    the model was in training mode."""

    def __init__(self):
        self.loaded = []
        self.last = {}


def _digest(*chunks):
    h = hashlib.blake2b(digest_size=8)
    for c in chunks:
        h.update(c)
    return h.hexdigest()


class AugmentedDataset(Dataset):
    """Fixed samples, augmented on every load with NumPy's and Python's global RNGs."""

    def __init__(self, features, labels, trace):
        self.features = features
        self.labels = labels
        self.trace = trace

    def __len__(self):
        return len(self.features)

    def __getitem__(self, i):
        noise = np.random.standard_normal(self.features.shape[1]).astype(np.float32)
        scale = random.uniform(0.8, 1.2)
        x = (self.features[i] + torch.from_numpy(noise) * NOISE) * scale
        if self.trace is not None:
            self.trace.loaded.append((int(i), scale, noise.tobytes()))
        return x, self.labels[i]


class MLP(nn.Module):
    def __init__(self, features, hidden, classes, dropout):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.layers(x)


def warmup_cosine(step, *, warmup, total):
    """Linear warm-up, then a cosine decay to 10% of the peak."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.1 + 0.45 * (1.0 + math.cos(math.pi * progress))


def build(params, log, trace=None):
    """The setup of one run; identical in every process for the same params."""
    seed = int(params["seed"])
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    n, d, c = int(params["samples"]), int(params["features"]), int(params["classes"])
    features = torch.randn(n, d, generator=g)
    teacher = torch.randn(d, c, generator=g)
    labels = (features @ teacher + 0.5 * torch.randn(n, c, generator=g)).argmax(dim=1)
    dataset = AugmentedDataset(features, labels, trace)

    model = MLP(d, int(params["hidden"]), c, float(params["dropout"]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(params["lr"]),
                                  betas=(0.9, 0.95), weight_decay=0.05)
    schedule = functools.partial(warmup_cosine, warmup=int(params["warmup"]),
                                 total=int(params["total_steps"]))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    batch_size = int(params["batch_size"])

    def make_loader(epoch):
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise ValueError(f"make_loader(epoch): epoch must be an int >= 0, got {epoch!r}")
        g = torch.Generator()
        g.manual_seed((seed * 7919 + 104729 * int(epoch)) % (1 << 62))
        return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=g,
                          num_workers=0)

    if trace is not None:
        model.register_forward_pre_hook(functools.partial(_on_forward, trace, model))

    # The global RNGs as the run starts: dropout draws from torch's, the dataset from
    # NumPy's and Python's.
    torch.manual_seed(seed + 2)
    random.seed(seed + 3)
    np.random.seed((seed + 4) % (1 << 32))
    return Setup(model, optimizer, scheduler, make_loader, nn.CrossEntropyLoss(), log,
                 int(params["checkpoint_every"]))


def _on_forward(trace, model, module, args):
    x = args[0] if args else None
    n = x.shape[0] if isinstance(x, torch.Tensor) and x.dim() > 0 else 0
    batch = trace.loaded[-n:] if n else []
    trace.last = {
        "batch": [i for i, _, _ in batch],
        "random": _digest(*(repr(s).encode() for _, s, _ in batch)),
        "numpy": _digest(*(b for _, _, b in batch)),
        "torch": _digest(torch.get_rng_state().numpy().tobytes()),
        "params": _params_digest(model),
        "training": model.training,  # dropout on: model.eval() after loading turns it off
    }
    trace.loaded.clear()


def _params_digest(model):
    return _digest(*(p.detach().numpy().tobytes() for p in model.parameters()))


def _adam_steps(optimizer):
    """How many steps the optimizer has made (Adam keeps a count per parameter)."""
    try:
        first = optimizer.param_groups[0]["params"][0]
        step = optimizer.state.get(first, {}).get("step", 0)
        return int(step)
    except Exception:
        return -1


class Logbook:
    """``setup.log``: checks its arguments, then asks the judge (``watch``), keeps the
    entries with their diagnosis (``trace``) or only (step, loss) pairs."""

    def __init__(self, watch=None, trace=None):
        self.watch = watch
        self.trace = trace
        self.setup = None
        self.entries = []

    def __call__(self, step, loss):
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"setup.log(step, loss): step must be an int, got {step!r}")
        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            loss = loss.item()
        if isinstance(loss, bool) or not isinstance(loss, numbers.Real):
            raise TypeError(f"setup.log(step, loss): loss must be a float (loss.item()), "
                            f"got {type(loss).__name__}")
        step, loss = int(step), float(loss)
        if self.trace is None and self.watch is None:
            self.entries.append([step, loss])
            return
        entry = {"event": "log", "step": step, "loss": loss,
                 "adam": _adam_steps(self.setup.optimizer),
                 "sched": int(getattr(self.setup.scheduler, "last_epoch", -1)),
                 **(self.trace.last if self.trace else {})}
        if self.watch is not None:
            self.watch.ask(entry)
        else:
            self.entries.append(entry)


# ---------------------------------------------------------------- watching the checkpoints


class Watch:
    """Talks to the judge about one checkpoint folder. One question at a time: a learner's
    background thread that saves must not interleave with the main thread's questions."""

    def __init__(self, ctx, ckpt_dir, split):
        self.ctx = ctx
        self.root = os.path.realpath(ckpt_dir)
        self.split = float(split)
        self.lock = threading.RLock()
        self.busy = threading.local()

    def cut(self, size):
        """Where a write of ``size`` bytes pauses: never at its very start or end."""
        return min(max(1, int(size * self.split)), size - 1)

    @contextlib.contextmanager
    def quiet(self):
        """The fixture's own file operations are not the learner's: no questions."""
        before = getattr(self.busy, "on", False)
        self.busy.on = True
        try:
            yield
        finally:
            self.busy.on = before

    def ask(self, data):
        with self.lock, self.quiet():
            return self.ctx.ask(data)

    def relative(self, path, dir_fd=None):
        """``path`` relative to the folder, or None when it lies outside."""
        try:
            path = os.fsdecode(path)
            base = os.getcwd() if dir_fd is None else os.readlink(f"/proc/self/fd/{dir_fd}")
            joined = os.path.join(base, path)
            full = os.path.realpath(joined)
            head, tail = os.path.split(joined)
            if not self.inside(full) and tail not in ("", ".", ".."):
                # a symbolic link in the folder: removing or renaming it changes the folder
                full = os.path.join(os.path.realpath(head), tail)
        except (TypeError, ValueError, OSError):
            return None
        if full == self.root:
            return "."
        if full.startswith(self.root + os.sep):
            return full[len(self.root) + 1:]
        return None

    def inside(self, full):
        return full == self.root or full.startswith(self.root + os.sep)


_watch = None


def _destination(f):
    """(path relative to the watched folder, "path" | "file") or (None, None)."""
    w = _watch
    if isinstance(f, (str, bytes, os.PathLike)):
        return w.relative(f), "path"
    if not callable(getattr(f, "write", None)):
        return None, None
    name = getattr(f, "name", None)
    if not isinstance(name, (str, bytes)):
        # os.fdopen(fd) of tempfile.mkstemp has no path for a name: ask the kernel
        try:
            name = os.readlink(f"/proc/self/fd/{int(f.fileno())}")
        except (AttributeError, OSError, TypeError, ValueError):
            return None, None
    return w.relative(name), "file"


def _hooked_save(real_save):
    """torch.save that pauses in the middle of the write while the judge watches. The
    original is kept in this closure only: the module exposes no unhooked save."""

    def save(obj, f, *args, **kwargs):
        w = _watch
        if w is None or getattr(w.busy, "on", False):
            return real_save(obj, f, *args, **kwargs)
        where, kind = _destination(f)
        if where is None:
            return real_save(obj, f, *args, **kwargs)
        if kind == "path":
            # The real torch.save first (its bytes, its checks and errors), then the file is
            # cut back to what it held halfway through the write, and completed if the judge
            # answers.
            real_save(obj, f, *args, **kwargs)
            with w.quiet(), open(f, "rb+") as out:
                data = out.read()
                cut = w.cut(len(data))
                out.seek(cut)
                out.truncate()
                out.flush()
                w.ask({"event": "save_mid", "path": where, "target": kind, "written": cut,
                       "total": len(data)})
                out.write(data[cut:])
        else:
            # To a file object torch.save writes the same bytes as to a buffer.
            buffer = io.BytesIO()
            real_save(obj, buffer, *args, **kwargs)
            data = buffer.getbuffer()
            cut = w.cut(len(data))
            f.write(data[:cut])
            f.flush()
            w.ask({"event": "save_mid", "path": where, "target": kind, "written": cut,
                   "total": len(data)})
            f.write(data[cut:])
        w.ask({"event": "save_done", "path": where, "target": kind, "written": len(data),
               "total": len(data)})

    save.__name__ = save.__qualname__ = real_save.__name__
    save.__doc__ = real_save.__doc__
    return save


def _committing(real, event):
    def commit(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        w = _watch
        if w is not None and not getattr(w.busy, "on", False):
            where = w.relative(dst, _dir_fd(kwargs.get("dst_dir_fd")))
            if where is not None:
                w.ask({"event": "commit", "path": where, "how": event})

    commit.__name__ = commit.__qualname__ = real.__name__
    commit.__doc__ = real.__doc__
    return commit


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# The audit events that change the folder: what the judge calls them, and where their
# arguments hold (path, dir_fd) pairs (os.rename and os.replace both raise "os.rename").
_CHANGES = {"os.remove": ("remove", ((0, 1),)), "os.rename": ("rename", ((0, 2), (1, 3))),
            "os.truncate": ("truncate", ((0, None),)), "os.rmdir": ("rmdir", ((0, 1),)),
            "shutil.rmtree": ("rmtree", ((0, 1),))}


def _dir_fd(value):
    """A directory fd, or None: Python passes -1 (or None) when the call was given none."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _audit(event, args):
    """Ask the judge before a change to the watched folder (it measures the folder then)."""
    w = _watch
    if w is None or getattr(w.busy, "on", False):
        return
    if event == "open":
        path, mode, flags = (*tuple(args), None, None, None)[:3]
        writing = (any(c in mode for c in "wax+") if isinstance(mode, str)
                   else isinstance(flags, int) and flags & _WRITE_FLAGS)
        if not writing or isinstance(path, int):
            return
        where = w.relative(path)
        if where is not None:
            w.ask({"event": "open", "path": where})
    elif event in _CHANGES:
        name, slots = _CHANGES[event]
        paths, inside = [], False
        for at, fd_at in slots:
            if at >= len(args):
                continue
            path = args[at]
            dir_fd = _dir_fd(args[fd_at]) if fd_at is not None and fd_at < len(args) else None
            if isinstance(path, int) and not isinstance(path, bool) and path >= 0:
                # os.truncate(fd, ...): the file the descriptor is open on
                try:
                    path, dir_fd = os.readlink(f"/proc/self/fd/{path}"), None
                except OSError:
                    continue
            if not isinstance(path, (str, bytes, os.PathLike)):
                continue
            paths.append(os.fsdecode(path))
            inside = inside or w.relative(path, dir_fd) is not None
        if inside:
            w.ask({"event": name, "path": paths[:2]})


def _install():
    real_replace, real_rename = os.replace, os.rename
    torch.save = torch.serialization.save = _hooked_save(torch.save)
    os.replace = _committing(real_replace, "os.replace")
    os.rename = _committing(real_rename, "os.rename")
    sys.addaudithook(_audit)


_install()
del _install


def _final_parameters(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _ckpt_dir(ckpt_dir):
    """The run's checkpoint folder, as an absolute path. The fixture makes it (the first
    process of a run does; later ones find it), the same way for every run the judge checks
    and for every run it times: nothing about the folder tells one from the other."""
    ckpt_dir = os.path.abspath(ckpt_dir)
    with contextlib.suppress(FileExistsError):
        os.mkdir(ckpt_dir)
    if os.path.islink(ckpt_dir) or not os.path.isdir(ckpt_dir):
        raise RuntimeError(f"the judge's checkpoint folder {ckpt_dir} is not a folder")
    return ckpt_dir


# ---------------------------------------------------------------- scenarios


def watched_run(sol, ctx, params, ckpt_dir):
    """One process of a run the judge may kill: asks after every log and around every
    change to ckpt_dir. Returns the final parameters when train() returns."""
    global _watch
    trace = Trace()
    ckpt_dir = _ckpt_dir(ckpt_dir)
    logbook = Logbook(Watch(ctx, ckpt_dir, params["split"]), trace)
    setup = build(params, logbook, trace)
    logbook.setup = setup
    _watch = logbook.watch
    try:
        sol.train(setup, ckpt_dir, int(params["total_steps"]))
    finally:
        _watch = None
    return {"final": _final_parameters(setup.model)}


def recorded_run(sol, ctx, params, ckpt_dir=None):
    """One uninterrupted run, recorded here: its log entries (with the diagnosis), the final
    parameters and the size of the largest file it left in ckpt_dir (one checkpoint's
    worth). The judge takes the expected run from the reference this way, in a fresh folder
    of the runner's own (ckpt_dir None): everything it needs is in the answer, so a
    practice pack can replay it without the reference. A submission's run gets a folder
    name the judge chose, and the judge measures that folder itself."""
    if ckpt_dir is None:
        ckpt_dir = os.path.join(os.getcwd(), "expected-run")
        if os.path.lexists(ckpt_dir):
            _remove_tree(ckpt_dir)
    ckpt_dir = _ckpt_dir(ckpt_dir)
    trace = Trace()
    logbook = Logbook(None, trace)
    setup = build(params, logbook, trace)
    logbook.setup = setup
    sol.train(setup, ckpt_dir, int(params["total_steps"]))
    largest = max((os.path.getsize(os.path.join(root, f))
                   for root, _, files in os.walk(ckpt_dir) for f in files), default=0)
    return {"logs": logbook.entries, "final": _final_parameters(setup.model),
            "largest_file": largest}


class Timed:
    def __init__(self, setup, logbook, ckpt_dir, total_steps):
        self.setup = setup
        self.logbook = logbook
        self.ckpt_dir = ckpt_dir
        self.total_steps = total_steps


_timed_dirs = []  # the folders of this runner's timed runs, removed before the next one


def prepare_timed(sol, ctx, params, name):
    """Untimed: a fresh checkpoint folder and a fresh setup for one timed run. ``name`` is
    an unpredictable name the judge chose, like those of the runs it checks; the judge looks
    into the folder after the run (a timed run must leave a checkpoint as any run does). The
    folders of earlier timed runs are removed first."""
    while _timed_dirs:
        old = _timed_dirs.pop()
        if os.path.lexists(old):
            _remove_tree(old)
    ckpt_dir = os.path.join(os.getcwd(), str(name))
    if os.path.lexists(ckpt_dir):
        raise RuntimeError(f"the judge's checkpoint folder {ckpt_dir} already exists")
    ckpt_dir = _ckpt_dir(ckpt_dir)
    _timed_dirs.append(ckpt_dir)
    logbook = Logbook()
    setup = build(params, logbook)
    return Timed(setup, logbook, ckpt_dir, int(params["total_steps"]))


def timed_train(sol, ctx, timed):
    """The timed part: train() from scratch, uninterrupted. Returns what the judge checks."""
    sol.train(timed.setup, timed.ckpt_dir, timed.total_steps)
    flat = torch.cat([p.detach().reshape(-1) for p in timed.setup.model.parameters()])
    return {"logs": timed.logbook.entries, "final": flat}


def _remove_tree(path):
    if os.path.islink(path) or not os.path.isdir(path):
        os.remove(path)
        return
    for entry in os.listdir(path):
        _remove_tree(os.path.join(path, entry))
    os.rmdir(path)
