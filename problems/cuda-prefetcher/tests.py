"""Tests for cuda-prefetcher. Public cases first; hidden ones draw fresh inputs per seed.

CPU cases (every worker) check the structure: the loader's batches in order, every one,
twice; tuples, namedtuples (their type kept), lists, dicts, nested, non-tensors unchanged;
passthrough on a CPU device (no copy); len; an empty loader; reading lazily.

CUDA cases (GPU workers only; "needs CUDA, none here" elsewhere) check the same structure
moved to the GPU, then what only a GPU shows: big batches read by a kernel the moment they
come out must equal a synchronous loop's (a missing wait_stream reads half-copied memory);
reads delayed behind a long kernel while the loop drops each batch must still see their
own batch (a missing record_stream lets the allocator reuse the memory); copies from a
loader that did not pin must come from pinned memory. The throughput check (CUDA) times a
loop whose step takes as long as a copy: overlapping them is about twice as fast as taking
turns.

A correct solution's free choices are never tested: how it recurses, stream or event, how
many batches it reads ahead (three at most), whether it pins a pinned tensor again.
"""

import torch

from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload

AHEAD = 3  # batches a prefetcher may have taken from the loader beyond the one in use
CUDA_S = 90.0  # wall clock of a CUDA case (the first one initialises CUDA)
DTYPES = [torch.float32, torch.int64, torch.bool, torch.float16, torch.uint8, torch.int32]
KEYS = ["input_ids", "attention_mask", "labels", "pixel_values", "ids", "lengths", "meta"]
NAMES = [("Batch", ["inputs", "targets", "info"]), ("Pair", ["first", "second"]),
         ("Sample", ["x", "y"])]


# ---------------------------------------------------------------- batches (descriptions)


def tensor(values, dtype=None):
    return {"tensor": torch.tensor(values, dtype=dtype)}


def random_tensor(t):
    dtype = t.random.choice(DTYPES)
    shape = [t.random.randint(1, 5) for _ in range(t.random.randint(0, 3))]
    if dtype is torch.bool:
        x = torch.rand(shape, generator=t.rng) < 0.5
    elif dtype.is_floating_point:
        x = torch.randn(shape, generator=t.rng).to(dtype)
    else:
        x = torch.randint(0, 100, shape, generator=t.rng).to(dtype)
    return {"tensor": x}


def random_value(t):
    kind = t.random.randrange(6)
    if kind == 0:
        return {"value": t.random.randint(-5, 1000)}
    if kind == 1:
        return {"value": round(t.random.uniform(-1, 1), 3)}
    if kind == 2:
        return {"value": t.random.choice(["en", "zh", "sample-17", ""])}
    if kind == 3:
        return {"value": None}
    if kind == 4:
        return {"value": t.random.random() < 0.5}
    return {"object": f"meta-{t.random.randrange(1000)}"}


def random_node(t, depth):
    """A random batch element: containers down to ``depth``, tensors and other leaves."""
    roll = t.random.random()
    if depth <= 0 or roll < 0.35:
        return random_tensor(t) if t.random.random() < 0.7 else random_value(t)
    width = t.random.randint(1, 3)
    if roll < 0.5:
        return {"tuple": [random_node(t, depth - 1) for _ in range(width)]}
    if roll < 0.65:
        return {"list": [random_node(t, depth - 1) for _ in range(width)]}
    if roll < 0.85:
        keys = t.random.sample(KEYS, width)
        return {"dict": [[k, random_node(t, depth - 1)] for k in keys]}
    name, fields = t.random.choice(NAMES)
    return {"namedtuple": name, "fields": fields,
            "items": [random_node(t, depth - 1) for _ in fields]}


def random_batch(t):
    """A batch with at least one tensor inside a container, sometimes a bare tensor."""
    if t.random.random() < 0.1:
        return random_tensor(t)
    name, fields = t.random.choice(NAMES)
    shapes = [
        {"dict": [["input_ids", random_tensor(t)], ["extra", random_node(t, 3)]]},
        {"tuple": [random_tensor(t), random_node(t, 3)]},
        {"list": [random_node(t, 3), random_tensor(t)]},
        {"namedtuple": name, "fields": fields,
         "items": [random_tensor(t)] + [random_node(t, 3) for _ in fields[1:]]},
    ]
    return t.random.choice(shapes)


def mixed_dict(t):
    """A dict batch holding non-tensors next to its tensor (a sample's id, its lengths):
    one in every draw of nested_cpu, so that a move that drops them is always seen."""
    entries = [["input_ids", random_tensor(t)], ["id", random_value(t)],
               ["lengths", {"list": [random_value(t) for _ in range(t.random.randint(1, 3))]}]]
    t.random.shuffle(entries)
    return {"dict": entries}


def numbered(k):
    """A small batch that says which one it is."""
    return {"tuple": [tensor([k, k + 1, k + 2]), {"value": f"batch-{k}"}]}


# ---------------------------------------------------------------- comparing trees


def kind_of(node):
    if not isinstance(node, dict):
        return "?"
    for kind in ("tensor", "tuple", "list", "dict", "namedtuple", "value", "object", "other"):
        if kind in node:
            return kind
    return "?"


def shown_kind(node):
    """How a described value reads in a message: "a tuple", "namedtuple Batch", ..."""
    kind = kind_of(node)
    if kind == "namedtuple":
        return f"namedtuple {node.get('namedtuple')}"
    if kind == "value":
        return f"{type(node['value']).__name__} {node['value']!r}"[:60]
    if kind == "object":
        return f"Meta({node['object']!r})"
    if kind == "other":
        return str(node.get("other"))[:60]
    if kind == "tensor" and isinstance(node.get("tensor"), torch.Tensor):
        x = node["tensor"]
        return f"tensor {str(x.dtype).replace('torch.', '')}{list(x.shape)}"
    return {"tuple": "tuple", "list": "list", "dict": "dict"}.get(kind, "something else")


def tree_problem(got, exp, device, path):
    """None when ``got`` (what came out) matches the description ``exp`` moved to
    ``device``, else (path, T message)."""
    kind, got_kind = kind_of(exp), kind_of(got)
    if kind == "namedtuple" and got_kind == "tuple":
        return path, T(f"期望 namedtuple {exp['namedtuple']}，得到普通的 tuple —— "
                       f"用 type(batch)(*items) 重建 namedtuple，它的类型要保留",
                       f"expected namedtuple "
                       f"{exp['namedtuple']}, got a plain tuple — rebuild a namedtuple with "
                       f"type(batch)(*items) so that it keeps its type")
    if kind != got_kind:
        return path, T(f"期望 {shown_kind(exp)}，得到 {shown_kind(got)}",
                       f"expected {shown_kind(exp)}, got {shown_kind(got)}")
    if kind == "tensor":
        return tensor_problem(got, exp["tensor"], device, path)
    if kind == "value":
        same = type(got["value"]) is type(exp["value"]) and got["value"] == exp["value"]
        return None if same else (path, T(
            f"不是张量的值要原样保留：期望 {shown_kind(exp)}，得到 {shown_kind(got)}",
            f"values that are not tensors stay as they are: expected {shown_kind(exp)}, got "
            f"{shown_kind(got)}"))
    if kind == "object":
        return None if got["object"] == exp["object"] else (path, T(
            f"期望 {shown_kind(exp)}，得到 {shown_kind(got)}",
            f"expected {shown_kind(exp)}, got {shown_kind(got)}"))
    if kind == "namedtuple":
        if (got.get("namedtuple") != exp["namedtuple"] or got.get("fields") != exp["fields"]
                or got.get("known") is not True):
            return path, T(f"namedtuple 的类型变了：期望 {exp['namedtuple']}{exp['fields']}，得到 "
                           f"{got.get('namedtuple')}{got.get('fields')}", f"the namedtuple's "
                           f"type changed: expected {exp['namedtuple']}{exp['fields']}, got "
                           f"{got.get('namedtuple')}{got.get('fields')}")
        pairs = [(f".{f}", g, e) for f, g, e in zip(exp["fields"], got.get("items") or [],
                                                     exp["items"], strict=False)]
        count = (len(got.get("items") or []), len(exp["items"]))
    elif kind == "dict":
        got_items = dict((k, v) for k, v in got["dict"]) if isinstance(got["dict"], list) and all(
            isinstance(p, list) and len(p) == 2 for p in got["dict"]) else {}
        if sorted(map(str, got_items)) != sorted(str(k) for k, _ in exp["dict"]):
            return path, T(f"dict 的键变了：期望 {[k for k, _ in exp['dict']]}，得到 "
                           f"{list(got_items)}", f"the dict's keys changed: expected "
                           f"{[k for k, _ in exp['dict']]}, got {list(got_items)}")
        pairs = [(f"[{k!r}]", got_items[k], v) for k, v in exp["dict"]]
        count = (len(got_items), len(exp["dict"]))
    else:
        pairs = [(f"[{i}]", g, e) for i, (g, e) in enumerate(zip(got[kind], exp[kind],
                                                                 strict=False))]
        count = (len(got[kind]), len(exp[kind]))
    if count[0] != count[1]:
        return path, T(f"期望 {count[1]} 个元素，得到 {count[0]} 个",
                       f"expected {count[1]} items, got {count[0]}")
    for step, g, e in pairs:
        problem = tree_problem(g, e, device, path + step)
        if problem is not None:
            return problem
    return None


def tensor_problem(got, exp, device, path):
    x = got.get("tensor")
    if not isinstance(x, torch.Tensor):
        return path, T("结果无法识别", "unrecognisable")
    if got.get("device") != device:
        if device == "cuda":
            return path, T(f"这个张量还在 {got.get('device')} 上，期望在 cuda 上 —— "
                           f"嵌套在 list、tuple、dict 里的张量（任意深度）也要搬到 GPU",
                           f"this tensor is on "
                           f"{got.get('device')}, expected cuda — tensors nested inside lists, "
                           f"tuples and dicts (at any depth) move to the GPU too")
        return path, T(f"这个张量在 {got.get('device')} 上，device 是 cpu 时批次原样通过",
                       f"this tensor is on {got.get('device')}; with a CPU device batches pass "
                       f"through unchanged")
    if x.dtype != exp.dtype or x.shape != exp.shape:
        return path, T(f"期望 {shown_kind({'tensor': exp})}，得到 {shown_kind(got)} —— "
                       f"dtype 和形状不能变",
                       f"expected {shown_kind({'tensor': exp})}, got {shown_kind(got)} — dtype "
                       f"and shape stay the same")
    if not torch.equal(x, exp):
        return path, T("张量的值变了（应当和 loader 给出的完全相同）",
                       "the tensor's values changed (they must equal the loader's exactly)")
    if device == "cpu" and got.get("shared") is not True:
        return path, T("device 是 cpu 时这个张量被复制了：没有什么需要拷贝，批次应当原样通过"
                       "（不要 pin_memory、clone）", "with a CPU device this tensor was copied: "
                       "there is nothing to copy, batches pass through as they are (no "
                       "pin_memory, no clone)")
    return None


# ---------------------------------------------------------------- iterating


def where(**inputs):
    text = ", ".join(f"{k}={v}" for k, v in inputs.items())
    return T(f"\n（{text}）", f"\n({text})")


def unrecognisable(t, at):
    t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable") + at)


def check_iterate(t, batches, device, *, loader="list", device_kind="str", passes=2):
    """Iterate a prefetcher over ``batches`` (descriptions) in the sandbox and check: len(),
    every pass yields every batch in order, moved to ``device``; a counting loader is never
    read more than AHEAD batches ahead."""
    res = t.sub.scenario("iterate", batches, device, loader=loader, device_kind=device_kind,
                         passes=passes)
    device_type = torch.device(device).type
    shown_device = f"torch.device({device!r})" if device_kind == "torch.device" else repr(device)
    at = where(loader=loader, device=shown_device, batches=len(batches))
    if not (isinstance(res, dict) and isinstance(res.get("passes"), list)
            and len(res["passes"]) == passes and isinstance(res.get("ahead"), list)):
        unrecognisable(t, at)
    t.expect(res.get("len") == len(batches), T(
        f"len(prefetcher) 应当等于 len(loader) = {len(batches)}，得到 {res.get('len')!r}",
        f"len(prefetcher) must equal len(loader) = {len(batches)}, got {res.get('len')!r}")
        + at)
    for p, got in enumerate(res["passes"]):
        check_pass(t, got, batches, device_type, p, at)
    if loader == "counting":
        for p, ahead in enumerate(res["ahead"]):
            worst = max(ahead, default=0)
            if isinstance(worst, int) and worst > AHEAD:
                k = ahead.index(worst)
                t.fail(T(f"第 {p + 1} 次迭代：拿到第 {k} 个批次时，loader 已经交出了 "
                         f"{k + 1 + worst} 个批次 —— 预取器只提前读一个批次（最多三个），"
                         f"不能先把整个 loader 读进内存：真实的数据集放不进内存，GPU 显存更放不下",
                         f"pass {p + 1}: when batch {k} came out, the "
                         f"loader had handed out {k + 1 + worst} batches — a prefetcher reads "
                         f"one batch ahead (three at most), never the whole loader: a real "
                         f"dataset does not fit in memory, let alone on the GPU") + at)


def check_pass(t, got, batches, device, p, at):
    which = T(f"第 {p + 1} 次迭代", f"pass {p + 1}")
    if not isinstance(got, list):
        unrecognisable(t, at)
    n, count = len(batches), len(got)
    if count != n:
        if count == 0 and p > 0:
            hint = T("第二次迭代什么也没有：在 __iter__ 里新建 loader 的迭代器"
                     "（不要在 __init__ 里建一次）",
                     "the second pass yielded nothing: make a new iterator of the loader in "
                     "__iter__ (not once in __init__)")
        elif count == n - 1:
            hint = T("少了最后一个批次：loader 用完之后，还要把已经预取的那个批次交出去",
                     "the last batch is missing: when the loader is exhausted, the batch "
                     "already prefetched must still come out")
        elif count > n:
            hint = T("批次比 loader 的还多", "more batches than the loader has")
        else:
            hint = T("有批次丢了", "batches were lost")
        t.fail(which + T(f"：期望 {n} 个批次，得到 {count} 个 —— ", f": expected {n} batches, got "
                         f"{count} — ") + hint + at)
    for k, (g, e) in enumerate(zip(got, batches, strict=True)):
        problem = tree_problem(g, e, device, "")
        if problem is not None:
            path, message = problem
            place = T(f"，第 {k} 个批次{path or '本身'}：", f", batch {k}{path}: ")
            t.fail(which + place + message + at)


# ---------------------------------------------------------------- public cases


EXAMPLE = [
    {"tuple": [tensor([[1, 2, 3], [4, 5, 6]]), tensor([0, 1])]},
    {"dict": [["input_ids", tensor([[7, 8], [9, 10]])], ["lengths", {"list": [
        {"value": 2}, {"value": 2}]}], ["source", {"value": "wiki"}]]},
    {"namedtuple": "Batch", "fields": ["inputs", "targets", "info"], "items": [
        tensor([[0.5, -1.0]]), tensor([3]), {"list": [{"value": "id-9"}, {"value": None}]}]},
]


@case(public=True, zh="device 是 cpu：批次原样通过，迭代两次", en="a CPU device: batches pass "
      "through, iterated twice")
def example_cpu_passthrough(t):
    check_iterate(t, EXAMPLE, "cpu")


@case(public=True, zh="包装一个 DataLoader（torch.device('cpu')）",
      en="wrapping a DataLoader (torch.device('cpu'))")
def example_dataloader(t):
    batches = [{"dict": [["x", tensor([[k, k + 1.5]])], ["y", tensor([k % 2])],
                         ["name", {"value": f"sample-{k}"}]]} for k in range(4)]
    check_iterate(t, batches, "cpu", loader="dataloader", device_kind="torch.device")


# ---------------------------------------------------------------- hidden cases: CPU


@case(zh="嵌套结构原样通过（tuple、namedtuple、list、dict、非张量）",
      en="nested structures pass through (tuple, namedtuple, list, dict, non-tensors)")
def nested_cpu(t):
    for loader in ("list", "dataloader", "counting"):
        batches = [random_batch(t) for _ in range(t.random.randint(3, 7))]
        batches.insert(t.random.randrange(len(batches) + 1), mixed_dict(t))
        check_iterate(t, batches, "cpu", loader=loader,
                      device_kind=t.random.choice(["str", "torch.device"]))


@case(zh="每个批次都按顺序产出，包括最后一个；迭代两次",
      en="every batch in order, the last one included; two passes")
def every_batch_cpu(t):
    for n in (1, 2, t.random.randint(5, 12)):
        check_iterate(t, [numbered(t.random.randrange(100) + 10 * k) for k in range(n)], "cpu",
                      loader=t.random.choice(["list", "dataloader"]))


@case(zh="空的 loader：什么也不产出，len 为 0", en="an empty loader: nothing, len 0")
def empty_loader_cpu(t):
    check_iterate(t, [], "cpu", loader=t.random.choice(["list", "counting"]))


@case(zh="没有张量的批次、单独一个张量的批次", en="batches without tensors, a bare tensor "
      "as a batch")
def odd_batches_cpu(t):
    # (Not a bare None: a loader never yields one, and None is a common end-of-loader mark.)
    batches = [{"tuple": [{"value": "only text"}, {"value": t.random.randint(0, 9)}]},
               random_tensor(t), {"list": []}, {"dict": []}, {"value": "just a string"}]
    t.random.shuffle(batches)
    check_iterate(t, batches, "cpu")


@case(zh="按需读取 loader（最多提前三个批次）", en="reads the loader lazily (three batches "
      "ahead at most)")
def lazy_cpu(t):
    check_iterate(t, [numbered(k) for k in range(t.random.randint(6, 12))], "cpu",
                  loader="counting")


# ---------------------------------------------------------------- hidden cases: CUDA


@case(zh="嵌套结构里的每个张量都搬到 GPU（值、dtype 不变，非张量原样）",
      en="every tensor of nested structures moves to the GPU (values, dtypes kept; "
         "non-tensors unchanged)", device="cuda", timeout_s=CUDA_S)
def nested_cuda(t):
    for loader, device, kind in (("list", "cuda", "str"), ("dataloader", "cuda", "torch.device"),
                                 ("counting", "cuda:0", "str")):
        batches = [random_batch(t) for _ in range(t.random.randint(3, 7))]
        check_iterate(t, batches, device, loader=loader, device_kind=kind)


@case(zh="GPU 上：最后一个批次、迭代两次、空 loader、没有张量的批次、按需读取",
      en="on the GPU: the last batch, two passes, an empty loader, batches without tensors, "
         "reading lazily", device="cuda", timeout_s=CUDA_S)
def edges_cuda(t):
    for n in (1, 2, t.random.randint(5, 9)):
        check_iterate(t, [numbered(t.random.randrange(100) + 10 * k) for k in range(n)], "cuda",
                      loader="counting")
    check_iterate(t, [], "cuda")
    check_iterate(t, [{"tuple": [{"value": "text"}, {"value": 3}]}, random_tensor(t)], "cuda")


def big_case(t, scenario, count, numel, **kwargs):
    """Run a big-batch scenario on both sides with the same seed; the reference's
    synchronous loop is the truth (and its prefetcher must agree with it)."""
    seed = t.random.randrange(2**31)
    exp = t.ref.scenario(scenario, seed, count, numel, **kwargs)
    if not torch.equal(exp["read"], exp["sync"]):
        raise AssertionError(f"{scenario}: the reference's prefetcher read other data than "
                             f"its synchronous loop on this GPU: the case cannot judge")
    got = t.sub.scenario(scenario, seed, count, numel, **kwargs)
    at = where(batches=count, bytes_per_batch=f"{numel * 4.5 / 2**20:.0f} MiB")
    if not (isinstance(got, dict) and isinstance(got.get("read"), torch.Tensor)):
        unrecognisable(t, at)
    if got.get("not_on_cuda"):
        t.fail(T(f"{got['not_on_cuda']} 个批次的张量不在 GPU 上"
                 f"（batch['x'] 和 batch['y'][0] 都要搬过去）",
                 f"{got['not_on_cuda']} batches came out with tensors not on the GPU "
                 f"(batch['x'] and batch['y'][0] both move)") + at)
    return got, exp, at


def first_wrong(got, exp):
    """(batch, tensor name) of the first digest that differs, or None."""
    if got.shape != exp.shape:
        return -1, ""
    for k in range(exp.shape[0]):
        for j, name in enumerate(("batch['x']", "batch['y'][0]")):
            if int(got[k, j]) != int(exp[k, j]):
                return k, name
    return None


@case(zh="大批次一出来就被核函数读取：和同步循环逐位相同（wait_stream）",
      en="big batches read by a kernel as soon as they come out equal a synchronous loop "
         "bit for bit (wait_stream)", device="cuda", timeout_s=CUDA_S)
def consumed_at_once_cuda(t):
    got, exp, at = big_case(t, "immediate", 8, 8 << 20)
    wrong = first_wrong(got["read"], exp["sync"])
    if wrong is None:
        return
    k, name = wrong
    if k < 0:
        t.fail(T(f"期望 8 个批次，消费者拿到 {got['read'].shape[0]} 个",
                 f"expected 8 batches, the consumer got {got['read'].shape[0]}") + at)
    t.fail(T(f"第 {k} 个批次的 {name}：消费者在 GPU 上读到的数据和同步循环"
             f"（逐个 .to(device)）的不同 —— 批次交出去的时候拷贝还没完成，"
             f"核函数读到了拷了一半的显存。交出批次之前，让当前流等待拷贝流："
             f"torch.cuda.current_stream().wait_stream(copy_stream)"
             f"（或者在拷贝后记录一个 event 并等待它）",
             f"batch {k}, {name}: what the consumer's kernel read differs from a synchronous "
             f"loop (.to(device) one batch after another) — the batch was handed out before its "
             f"copy had finished, and the kernel read half-copied memory. Before handing a "
             f"batch out, make the current stream wait for the copy stream: "
             f"torch.cuda.current_stream().wait_stream(copy_stream) (or record an event after "
             f"the copy and wait on it)") + at)


@case(zh="读取被长核函数推迟、批次随即被丢弃：读到的仍是自己的批次（record_stream）",
      en="reads delayed behind a long kernel, the batch dropped at once: each read still "
         "sees its own batch (record_stream)", device="cuda", timeout_s=CUDA_S)
def delayed_read_cuda(t):
    got, exp, at = big_case(t, "delayed", 8, 8 << 20, delay_ms=150.0)
    wrong = first_wrong(got["read"], exp["sync"])
    if wrong is None:
        return
    k, name = wrong
    if k < 0:
        t.fail(T(f"期望 8 个批次，消费者拿到 {got['read'].shape[0]} 个",
                 f"expected 8 batches, the consumer got {got['read'].shape[0]}") + at)
    t.fail(T(f"第 {k} 个批次的 {name}：读取在当前流上排在一个长核函数后面，"
             f"等它真正执行时，这块显存已经被下一个批次的拷贝覆盖了 —— "
             f"张量是在拷贝流上分配的，缓存分配器只知道拷贝流在用它；批次被丢弃后，"
             f"这块显存马上就可以分给别的张量。交出批次时对每个张量调用 "
             f"tensor.record_stream(torch.cuda.current_stream())",
             f"batch {k}, {name}: the read was queued on the current stream behind a long "
             f"kernel, and by the time it ran, the memory held a later batch's copy — the "
             f"tensors were allocated on the copy stream, so the caching allocator only knows "
             f"that stream uses them; once the batch is dropped their memory goes to the next "
             f"tensor at once. When you hand a batch out, call "
             f"tensor.record_stream(torch.cuda.current_stream()) on each of its tensors") + at)


@case(zh="loader 没有 pin 内存时，预取器自己 pin：non_blocking 拷贝都来自锁页内存",
      en="the prefetcher pins what the loader did not: non_blocking copies come from "
         "pinned memory", device="cuda", timeout_s=CUDA_S)
def pins_itself_cuda(t):
    count, numel = 6, 4 << 20
    seed = t.random.randrange(2**31)
    exp = t.ref.scenario("immediate", seed, count, numel, pin=False)
    got = t.sub.scenario("pageable", seed, count, numel)
    at = where(batches=count, pinned_by_the_loader=False)
    if not (isinstance(got, dict) and isinstance(got.get("read"), torch.Tensor)
            and isinstance(got.get("copies"), list)):
        unrecognisable(t, at)
    if got.get("not_on_cuda"):
        t.fail(T(f"{got['not_on_cuda']} 个批次的张量不在 GPU 上", f"{got['not_on_cuda']} batches "
                 f"came out with tensors not on the GPU") + at)
    wrong = first_wrong(got["read"], exp["sync"])
    if wrong is not None:
        t.fail(T(f"第 {wrong[0]} 个批次：读到的数据和同步循环的不同（loader 没有 pin 内存）",
                 f"batch {wrong[0]}: what was read differs from a synchronous loop (the loader "
                 f"did not pin memory)") + at)
    bad = [c for c in got["copies"] if isinstance(c, dict) and c.get("non_blocking")
           and c.get("pinned") is False]
    if bad:
        t.fail(T(f"{len(bad)} 次 non_blocking=True 的主机到设备拷贝读的是普通（可换页）内存 —— "
                 f"从可换页内存拷贝时 CUDA 先把数据复制到一块锁页的中转区，主机线程要等这一步做完，"
                 f"拷贝并不异步，也就谈不上和计算重叠。loader 没有 pin 的张量先 "
                 f"tensor.pin_memory()，再 .to(device, non_blocking=True)",
                 f"{len(bad)} host-to-device copies with non_blocking=True read ordinary "
                 f"(pageable) memory — from pageable memory CUDA first stages the data through a "
                 f"pinned buffer while the host thread waits, so the copy is not asynchronous "
                 f"and cannot overlap anything. Pin what the loader did not "
                 f"(tensor.pin_memory()), then .to(device, non_blocking=True)") + at)


# ---------------------------------------------------------------- throughput


@workload
def overlap(device):
    """16 batches of 64 MiB (pinned by the loader, as DataLoader(pin_memory=True) does), a
    step that keeps the GPU busy as long as one copy takes: overlapping the copies with
    the steps takes about (16 + 1) copy times, taking turns about 2 x 16."""
    numel, count = 16 << 20, 16

    def make(rng):
        key = int(torch.randint(1, 2**31 - 1, (), generator=rng))
        return [numel, count, key], {}

    def check(got, expected):
        digests = got.get("digests") if isinstance(got, dict) else None
        if not (isinstance(digests, torch.Tensor) and digests.dtype == torch.int64
                and digests.shape == expected["digests"].shape):
            return T(f"期望 {count} 个批次的摘要", f"expected digests of {count} batches")
        if got.get("on_cuda") != count:
            return T("有的批次不在 GPU 上", "some batches did not come out on the GPU")
        if not torch.equal(digests, expected["digests"]):
            return T("读到的数据和参考解答的不同", "the data read differs from the reference's")
        return True

    return Workload(fn="overlap", target="fixture", prepare="prepare_overlap", make=make,
                    check=check)
