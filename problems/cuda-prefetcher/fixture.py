"""Scenarios for cuda-prefetcher. They run INSIDE the sandbox, next to the submission.

A prefetcher wraps a loader, so it cannot cross the judge's protocol: every scenario builds
the batches and the loader here (from a plain description the grader sends, or from a
seed), iterates ``CudaPrefetcher(loader, device)`` the way a training loop does, and
returns plain data: each yielded batch described as a tree (types, devices, tensors copied
back to the CPU), or digests of big batches computed on the GPU. The grader checks
everything; nothing returned from here is trusted.

Trees, both ways (the grader's description of a batch, and what came out):
``{"tensor": t}``, ``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": [[key, v], ...]}``,
``{"namedtuple": name, "fields": [...], "items": [...]}``, ``{"value": v}`` (int, float,
str, bool, None), ``{"object": tag}`` (an instance of ``Meta``, a class of this file).
"""

import collections
import statistics

import torch
from torch.utils.data import DataLoader, Dataset

# ---------------------------------------------------------------- batches from descriptions

_NAMEDTUPLES = {}  # (name, fields) -> the class, so that equal descriptions share a type


def namedtuple_class(name, fields):
    key = (name, tuple(fields))
    if key not in _NAMEDTUPLES:
        _NAMEDTUPLES[key] = collections.namedtuple(name, fields)
    return _NAMEDTUPLES[key]


class Meta:
    """Something in a batch that is not a tensor nor a container (a tokenizer's output
    object, a sample id): it must come out unchanged."""

    def __init__(self, tag):
        self.tag = tag

    def __eq__(self, other):
        return type(other) is Meta and other.tag == self.tag

    def __hash__(self):
        return hash(self.tag)


def build(node, pin=False):
    """A batch from its description (tensors cloned, pinned when ``pin``)."""
    if "tensor" in node:
        t = node["tensor"].clone()
        return t.pin_memory() if pin else t
    if "tuple" in node:
        return tuple(build(x, pin) for x in node["tuple"])
    if "list" in node:
        return [build(x, pin) for x in node["list"]]
    if "dict" in node:
        return {k: build(v, pin) for k, v in node["dict"]}
    if "namedtuple" in node:
        cls = namedtuple_class(node["namedtuple"], node["fields"])
        return cls(*(build(x, pin) for x in node["items"]))
    if "object" in node:
        return Meta(node["object"])
    return node["value"]


def describe(obj, inputs, depth=0):
    """What came out, as a tree the grader can compare. ``inputs``: data_ptr of every input
    tensor (a tensor that kept one was not copied)."""
    if depth > 20:
        return {"other": "too deep"}
    if isinstance(obj, torch.Tensor):
        return {"tensor": obj.detach().to("cpu", copy=True), "device": obj.device.type,
                "shared": obj.device.type == "cpu" and obj.data_ptr() in inputs}
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
        cls = type(obj)
        known = _NAMEDTUPLES.get((cls.__name__, tuple(cls._fields))) is cls
        return {"namedtuple": cls.__name__, "fields": list(cls._fields), "known": known,
                "items": [describe(x, inputs, depth + 1) for x in obj]}
    if type(obj) is tuple:
        return {"tuple": [describe(x, inputs, depth + 1) for x in obj]}
    if type(obj) is list:
        return {"list": [describe(x, inputs, depth + 1) for x in obj]}
    if type(obj) is dict:
        return {"dict": [[k, describe(v, inputs, depth + 1)] for k, v in obj.items()]}
    if type(obj) is Meta:
        return {"object": obj.tag}
    if obj is None or type(obj) in (int, float, str, bool):
        return {"value": obj}
    return {"other": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def tensor_ptrs(obj, out):
    if isinstance(obj, torch.Tensor):
        out.add(obj.data_ptr())
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            tensor_ptrs(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            tensor_ptrs(x, out)
    return out


# ---------------------------------------------------------------- loaders


def identity(x):
    return x


class ListDataset(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class CountingLoader:
    """A loader that knows how many batches it has handed out (to see how far ahead the
    prefetcher reads). Iterable many times, with a len()."""

    def __init__(self, batches):
        self.batches = batches
        self.handed = 0

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        for batch in self.batches:
            self.handed += 1
            yield batch


def make_loader(batches, kind):
    if kind == "dataloader":
        # batch_size=None: each item is a whole batch; collate_fn=identity keeps it as is.
        return DataLoader(ListDataset(batches), batch_size=None, shuffle=False,
                          collate_fn=identity)
    if kind == "counting":
        return CountingLoader(batches)
    return list(batches)


def as_device(device, kind):
    return torch.device(device) if kind == "torch.device" else device


# ---------------------------------------------------------------- structure scenarios


def iterate(sol, ctx, batches, device, *, loader="list", device_kind="str", passes=2,
            pin=False):
    """Wrap a loader of the described batches and iterate the prefetcher ``passes`` times.
    Returns len() before iterating, every pass's batches described, and (counting loader)
    how many batches the loader had handed out beyond the one being consumed."""
    built = [build(b, pin) for b in batches]
    inputs = set()
    for b in built:
        tensor_ptrs(b, inputs)
    source = make_loader(built, loader)
    pf = sol.CudaPrefetcher(source, as_device(device, device_kind))
    out = {"len": len(pf), "passes": [], "ahead": []}
    limit = len(built) + 5  # more batches than the loader has: an endless iterator
    for _ in range(passes):
        got, ahead = [], []
        start = source.handed if loader == "counting" else 0
        for k, batch in enumerate(pf):
            if k >= limit:
                break
            if loader == "counting":
                ahead.append(source.handed - start - (k + 1))
            got.append(describe(batch, inputs))
        out["passes"].append(got)
        out["ahead"].append(ahead)
    return out


# ---------------------------------------------------------------- CUDA scenarios


def digest(t):
    """An exact, order-independent digest of a tensor's bits, computed on its device:
    the int64 sum of its 32-bit words."""
    return t.contiguous().view(torch.int32).sum(dtype=torch.int64)


def big_batches(seed, count, numel, pin):
    """``count`` batches {"x": int32[numel], "y": (float32[numel // 8], label)}, every one
    different in every 32-bit word."""
    g = torch.Generator().manual_seed(seed)
    base_x = torch.randint(-2**31, 2**31 - 1, (numel,), dtype=torch.int32, generator=g)
    base_y = torch.randn(numel // 8, generator=g)
    keys = torch.randint(1, 2**31 - 1, (count,), generator=g).tolist()
    batches = []
    for k, key in enumerate(keys):
        x = base_x ^ key
        y = (base_y.view(torch.int32) ^ key).view(torch.float32)
        if pin:
            x, y = x.pin_memory(), y.pin_memory()
        batches.append({"x": x, "y": (y, k)})
    return batches


def batch_digests(batch):
    """The digests of a big batch, as a [2] int64 tensor on the batch's device."""
    return torch.stack([digest(batch["x"]), digest(batch["y"][0])])


def on_cuda(batch):
    return (isinstance(batch, dict) and isinstance(batch.get("x"), torch.Tensor)
            and batch["x"].is_cuda and isinstance(batch.get("y"), (tuple, list))
            and isinstance(batch["y"][0], torch.Tensor) and batch["y"][0].is_cuda)


def gpu_delay(ms):
    """Keep the current stream busy for about ``ms`` milliseconds."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(int(ms * cycles_per_ms()))
        return
    a = torch.ones(2048, 2048, device="cuda")  # pragma: no cover - without _sleep
    for _ in range(max(1, int(ms))):
        a = a @ a * 1e-3


_CALIBRATION = {}


def cycles_per_ms():
    """GPU clock cycles per millisecond of torch.cuda._sleep, measured once."""
    if "cycles" not in _CALIBRATION:
        torch.cuda._sleep(1_000_000)  # warm up
        times = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(10_000_000)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        _CALIBRATION["cycles"] = 10_000_000 / max(statistics.median(times), 1e-3)
    return _CALIBRATION["cycles"]


def immediate(sol, ctx, seed, count, numel, *, device="cuda", pin=True):
    """Big batches, each consumed by a kernel the moment it comes out (no host sync until
    the end). A consumer stream that does not wait for the copy reads half-copied memory.
    Returns the digests of what the consumer read, and of a synchronous loop over the same
    batches (``.to(device)`` one after another)."""
    batches = big_batches(seed, count, numel, pin)
    read, kept, wrong = [], [], 0
    for batch in sol.CudaPrefetcher(batches, device):
        if not on_cuda(batch):
            wrong += 1
            continue
        read.append(batch_digests(batch))
        kept.append(batch)  # nothing is freed: only a missing wait shows here
    got = torch.stack(read).cpu() if read else torch.zeros(0, 2, dtype=torch.int64)
    sync = torch.stack([batch_digests({"x": b["x"].to(device), "y": (b["y"][0].to(device),)})
                        for b in batches]).cpu()
    return {"read": got, "sync": sync, "not_on_cuda": wrong}


def delayed(sol, ctx, seed, count, numel, *, device="cuda", delay_ms=150.0):
    """Big batches of one size, whose reads wait behind a long kernel on the consumer's
    stream while the loop runs ahead and drops each batch once its read is queued. Without
    record_stream the caching allocator hands a dropped batch's memory to the next copy
    before the delayed read has run."""
    batches = big_batches(seed, count, numel, pin=True)
    pf = sol.CudaPrefetcher(batches, device)
    torch.cuda.synchronize()
    gpu_delay(delay_ms)  # the consumer's stream is busy: every read below waits for it
    read, wrong = [], 0
    for batch in pf:
        if on_cuda(batch):
            read.append(batch_digests(batch))
        else:
            wrong += 1
        del batch  # the loop keeps nothing: only the prefetcher may still hold it
    got = torch.stack(read).cpu() if read else torch.zeros(0, 2, dtype=torch.int64)
    sync = torch.stack([batch_digests({"x": b["x"].to(device), "y": (b["y"][0].to(device),)})
                        for b in batches]).cpu()
    return {"read": got, "sync": sync, "not_on_cuda": wrong}


MISSING = object()


class CopyLog:
    """Records every host-to-device copy made through Tensor.to, Tensor.cuda and
    Tensor.copy_ while active: from pinned memory or not, non_blocking or not, on the
    default stream or another one."""

    NAMES = ("to", "cuda", "copy_")

    def __init__(self):
        self.entries = []
        self.saved = {}

    def note(self, src, dst, non_blocking):
        if (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)
                and src.device.type == "cpu" and dst.device.type == "cuda"):
            side = torch.cuda.current_stream(dst.device) != torch.cuda.default_stream(dst.device)
            self.entries.append({"pinned": bool(src.is_pinned()),
                                 "non_blocking": bool(non_blocking), "side_stream": bool(side),
                                 "nbytes": src.numel() * src.element_size()})

    def __enter__(self):
        # What torch.Tensor's own dict holds (usually nothing: the methods are inherited),
        # to put back exactly; and the methods to call.
        self.saved = {name: torch.Tensor.__dict__.get(name, MISSING) for name in self.NAMES}
        orig_to, orig_cuda, orig_copy = (getattr(torch.Tensor, n) for n in self.NAMES)
        log = self

        def to(self_t, *args, **kwargs):
            out = orig_to(self_t, *args, **kwargs)
            try:
                non_blocking = torch._C._nn._parse_to(*args, **kwargs)[2]
            except Exception:
                non_blocking = kwargs.get("non_blocking", False)
            log.note(self_t, out, non_blocking)
            return out

        def cuda(self_t, *args, **kwargs):
            out = orig_cuda(self_t, *args, **kwargs)
            log.note(self_t, out, kwargs.get("non_blocking", args[1] if len(args) > 1 else False))
            return out

        def copy_(self_t, src, *args, **kwargs):
            out = orig_copy(self_t, src, *args, **kwargs)
            log.note(src, self_t, kwargs.get("non_blocking", args[0] if args else False))
            return out

        torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.copy_ = to, cuda, copy_
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            if fn is MISSING:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, fn)


def pageable(sol, ctx, seed, count, numel, *, device="cuda"):
    """Big batches in ordinary (pageable) host memory, as a loader without pin_memory=True
    gives them; every host-to-device copy the prefetcher makes is recorded."""
    batches = big_batches(seed, count, numel, pin=False)
    read, wrong = [], 0
    with CopyLog() as log:
        for batch in sol.CudaPrefetcher(batches, device):
            if on_cuda(batch):
                read.append(batch_digests(batch))
            else:
                wrong += 1
    got = torch.stack(read).cpu() if read else torch.zeros(0, 2, dtype=torch.int64)
    return {"read": got, "not_on_cuda": wrong, "copies": log.entries}


# ---------------------------------------------------------------- throughput

_POOL = {}  # pinned host buffers and calibration, made once per runner


def prepare_overlap(sol, ctx, numel, count, key, *, ratio=1.0, pool=4):
    """Untimed: ``count`` batches of float32[numel] from a pool of ``pool`` pinned buffers
    (made once per runner, their bits changed by ``key`` per call), and the cycles of a
    "model" kernel that takes the GPU ``ratio`` times as long as copying one batch."""
    if _POOL.get("numel") != numel:
        g = torch.Generator().manual_seed(1234)
        _POOL.clear()
        _POOL["numel"] = numel
        _POOL["base"] = [torch.randint(-2**31, 2**31 - 1, (numel,), dtype=torch.int32,
                                       generator=g) for _ in range(pool)]
        _POOL["pinned"] = [b.clone().pin_memory() for b in _POOL["base"]]
        _POOL["copy_ms"] = copy_ms(_POOL["pinned"][0])
    for base, pinned in zip(_POOL["base"], _POOL["pinned"], strict=True):
        torch.bitwise_xor(base, key, out=pinned)
    batches = [(_POOL["pinned"][k % pool].view(torch.float32), k) for k in range(count)]
    cycles = int(_POOL["copy_ms"] * ratio * cycles_per_ms())
    torch.cuda.synchronize()
    return {"batches": batches, "cycles": cycles}


def copy_ms(pinned):
    """The median time of one host-to-device copy of ``pinned``, in milliseconds."""
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        pinned.to("cuda", non_blocking=True)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times[1:])


def overlap(sol, ctx, state):
    """Timed: a training loop whose step (a kernel) takes about as long as copying its
    batch. Overlapping the next copy with this step hides the copy; a synchronous
    ``.to(device)`` makes them take turns."""
    read, on_gpu = [], 0
    for x, _k in sol.CudaPrefetcher(state["batches"], "cuda"):
        torch.cuda._sleep(state["cycles"])  # the step
        read.append(digest(x))
        on_gpu += bool(x.is_cuda)
    return {"digests": torch.stack(read).cpu(), "on_cuda": on_gpu}
