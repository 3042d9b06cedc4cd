"""Tests for jsonl-dataset. Public cases first; hidden ones draw fresh files per seed.

Every data file is made here, in the grader, from the case's seed, and written by the judge
into the runners' folders (``t.data_file``): the submission and the reference read
identical copies, and what the reference returns is the expected value. The two big files
of the memory cases go to the submission only (a second copy of 100 MB would cost the
machine, not the test): their expected records are this file's own ``json.loads`` of the
lines it wrote, which is what any correct dataset returns.

What a correct solution is free to choose is never tested: how the index is stored
(array, numpy, list), how it is built (line by line, chunks, mmap), when the file is opened
(per read, per worker, per process) and what happens to the handle when pickled.
"""

import json
import random
from dataclasses import dataclass, field

import torch

from judge.i18n import T
from judge.testing import case, workload
from judge.throughput import Workload
from sandbox.protocol import Kind

MB = 1 << 20
MEMORY_SHARE = 0.5  # the dataset may keep at most this share of the file's size
WORDS = ["data", "loader", "worker", "shard", "token", "batch", "epoch", "seed", "lazy",
         "index", "offset", "byte", "line", "record", "memory", "file", "train", "model"]
CJK = "数据集懒加载偏移量字节行记录内存文件训练模型批次种子分片进程样本张量梯度优化器学习率"
EMOJI = ["😀", "🚀", "🧪", "📦", "🦀"]
BREAKS = ["\u2028", "\u2029", "\u0085"]  # line breaks to str.splitlines, not to JSON Lines
OTHER = ["é", "ß", "ñ", "\u00a0", "\u3000", "\\", '"', "\n", "\t", "\r", "/"]
BLANKS = [b"", b" ", b"\t", b"\r", b"  \t", b" \r", b"\t\r", b"\r\r"]


# ---------------------------------------------------------------- making files


def text(r, words, odd):
    out = []
    for _ in range(words):
        x = r.random()
        if x < odd:
            out.append(r.choice(BREAKS + OTHER + EMOJI))
        elif x < 0.55:
            out.append(r.choice(WORDS))
        else:
            out.append("".join(r.choice(CJK) for _ in range(r.randint(1, 5))))
    return " ".join(out)


def record(r, k, odd=0.08):
    return {"id": k, "text": text(r, r.randint(2, 24), odd),
            "tokens": [r.randint(300, 60000) for _ in range(r.randint(0, 24))],
            "score": round(r.uniform(-1, 1), r.randint(0, 10)),
            "lang": r.choice(["zh", "en", "mixed"]),
            "meta": {"ok": r.random() < 0.5, "source": r.choice(WORDS), "note": None}}


def any_value(r, k):
    """A record that is not an object: JSON Lines allows any JSON value on a line."""
    kind = r.randrange(6)
    if kind == 0:
        return [k, text(r, 3, 0.3), [r.random(), None, True]]
    if kind == 1:
        return f"record {k}: " + text(r, 4, 0.3)
    if kind == 2:
        return k + r.choice([0.5, 0.25, -1e-3, 1e21])
    if kind == 3:
        return r.choice([None, True, False])
    if kind == 4:
        return {"id": k, "nested": {"a": [{"b": [k, {"c": text(r, 2, 0.5)}]}]}}
    return []


def encode(r, value):
    """One JSON text, written the ways real files are: ASCII-escaped or not, spaced or not."""
    separators = r.choice([None, (",", ":")])
    return json.dumps(value, ensure_ascii=r.random() < 0.15, separators=separators).encode()


@dataclass
class JsonlFile:
    """A file and what it holds: every physical line (with its ending) and the records."""

    lines: list[bytes] = field(default_factory=list)
    records: list = field(default_factory=list)

    @property
    def data(self) -> bytes:
        return b"".join(self.lines)

    def add_record(self, raw: bytes, value, ending: bytes) -> None:
        self.lines.append(raw + ending)
        self.records.append(value)

    def describe(self) -> T:
        n, lines = len(self.records), len(self.lines)
        crlf = sum(line.endswith(b"\r\n") for line in self.lines)
        last = self.lines[-1] if self.lines else b""
        end = ("ends with a newline" if last.endswith(b"\n") else
               "no newline after the last line") if self.lines else "empty"
        end_zh = ("以换行结尾" if last.endswith(b"\n") else "最后一行后面没有换行") if self.lines \
            else "空文件"
        return T(f"（文件：{n} 条记录，{lines} 行，其中 {lines - n} 行空白，{crlf} 行以 \\r\\n "
                 f"结尾，"
                 f"{len(self.data)} 字节，{end_zh}）", f" (file: {n} records on {lines} lines, "
                 f"{lines - n} of them blank, {crlf} ending in \\r\\n, {len(self.data)} bytes, "
                 f"{end})")


def make_file(r, n, *, crlf=0.3, blank=0.15, odd=0.08, any_type=0.0, final_newline=None,
              lead=0, tail=0, trailing_space=0.03) -> JsonlFile:
    """``n`` records with the given shares of CRLF endings, blank lines (empty or only
    spaces, tabs and \\r), odd characters (U+2028, U+0085, emoji ...) and non-object
    records; ``lead``/``tail`` blank lines at the start and the end."""
    f = JsonlFile()

    def ending():
        return b"\r\n" if r.random() < crlf else b"\n"

    def blank_line():
        f.lines.append(r.choice(BLANKS) + ending())

    for _ in range(lead):
        blank_line()
    for k in range(n):
        while r.random() < blank:
            blank_line()
        value = any_value(r, k) if r.random() < any_type else record(r, k, odd)
        raw = encode(r, value)
        if r.random() < trailing_space:
            raw += r.choice([b" ", b"\t", b" \t"])
        f.add_record(raw, value, ending())
    for _ in range(tail):
        blank_line()
    if final_newline is None:
        final_newline = r.random() < 0.7
    if not final_newline and f.lines:
        last = f.lines[-1]
        f.lines[-1] = last[:-2] if last.endswith(b"\r\n") else last[:-1]
    return f


def fragments(r, count):
    """Record bodies without their id ('"text": ..., ...}'), to make big files fast."""
    out = []
    for _ in range(count):
        value = record(r, 0)
        del value["id"]
        out.append(json.dumps(value, ensure_ascii=False).encode()[1:])
    return out


def bulk_lines(r, size, pool=1500):
    """About ``size`` bytes of record lines '{"id": k, ...}' (ids 0, 1, 2 ...), with a
    blank line now and then; returns the lines (a blank one is a bytes of whitespace)."""
    bodies = fragments(r, pool)
    mean = sum(map(len, bodies)) / len(bodies) + 12
    n = int(size / mean)
    picks = r.choices(bodies, k=n)
    blank_before = set(r.sample(range(n), n // 200))
    lines = []
    for k, body in enumerate(picks):
        if k in blank_before:
            lines.append(r.choice(BLANKS) + b"\n")
        lines.append(b'{"id": %d, %s\n' % (k, body))
    return lines


def chunked(lines, size=8 * MB):
    """The lines joined into chunks of about ``size`` bytes (one write each)."""
    chunk, held = [], 0
    for line in lines:
        chunk.append(line)
        held += len(line)
        if held >= size:
            yield b"".join(chunk)
            chunk, held = [], 0
    if chunk:
        yield b"".join(chunk)


def records_of(lines):
    """Each record line's bytes, in order (blank lines skipped)."""
    return [line for line in lines if line.strip(b" \t\r\n")]


# ---------------------------------------------------------------- what came back


def same(a, b) -> bool:
    """Equal as JSON values: dict keys in any order, but 1, 1.0 and True all different."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def shown(value, limit=100):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def result_dict(t, res, keys):
    """A scenario's result, checked for shape (it ran next to the submission)."""
    if isinstance(res, dict) and isinstance(res.get("built"), dict):
        b = res["built"]
        t.fail(T(f"JsonlDataset(path) 抛出了 {b.get('raised')}: {b.get('message')}",
                 f"JsonlDataset(path) raised {b.get('raised')}: {b.get('message')}"))
    if not (isinstance(res, dict) and all(k in res for k in keys)):
        t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable"))
    return res


def length_hint(f: JsonlFile, got) -> T:
    """Why len() might be off, from what the file holds."""
    data = f.data
    physical = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    text = data.decode("utf-8")
    by_splitlines = sum(1 for line in text.splitlines() if line.strip(" \t\r"))
    if got == physical and physical != len(f.records):
        return T("空行和只含空格、制表符、\\r 的行不是记录，不能计数",
                 "empty lines, and lines of only spaces, tabs and \\r, are not records: do "
                 "not count them")
    if got == by_splitlines and by_splitlines != len(f.records):
        return T("str.splitlines() 会在 U+2028、U+2029、U+0085 处断行，可它们在 JSON 字符串里"
                 "只是普通字符：只按 b'\\n' 分行", "str.splitlines() breaks lines at U+2028, "
                 "U+2029 and U+0085, which are ordinary characters inside JSON strings: split "
                 "at b'\\n' only")
    if got == len(f.records) + 1:
        return T("最后一个换行符后面的空串不是记录", "the empty string after the last newline is "
                 "not a record")
    if got == len(f.records) - 1 and not data.endswith(b"\n"):
        return T("最后一行后面没有换行时，"
                 "它仍然是一条记录", "a last line without a newline after it "
                 "is still a record")
    return T("每条非空白行是一条记录", "every line that is not blank is one record")


def item_problem(i, got, exp, n) -> T | None:
    """What is wrong with dataset[i] (got and exp as the fixture reports them)."""
    if "raised" in exp:
        if got.get("raised") == exp["raised"]:
            return None
        what = (T(f"抛出了 {got.get('raised')}: {got.get('message')}",
                  f"it raised {got.get('raised')}: {got.get('message')}") if "raised" in got
                else T(f"它返回了 {shown(got.get('value'))}",
                       f"it returned {shown(got.get('value'))}"))
        return T(f"dataset[{i}]（len 为 {n}）：期望抛出 IndexError，", f"dataset[{i}] (len {n}): "
                 f"expected "
                 f"IndexError, ") + what + T(" —— 越界的下标（包括 i == len 和 i < -len）要抛出 "
                                                       "IndexError，像 list 一样",
                                                       " — an index out of range (i == len and "
                                                       "i < -len included) raises IndexError, "
                                                       "as a list does")
    if "raised" in got:
        return T(f"dataset[{i}]：期望 {shown(exp['value'])}，却抛出了 {got['raised']}: "
                 f"{got.get('message')}", f"dataset[{i}]: expected {shown(exp['value'])}, but it "
                 f"raised {got['raised']}: {got.get('message')}")
    if not same(got.get("value"), exp["value"]):
        return T(f"dataset[{i}]：期望 {shown(exp['value'])}，得到 {shown(got.get('value'))}",
                 f"dataset[{i}]: expected {shown(exp['value'])}, got {shown(got.get('value'))}")
    return None


def where_from(got_value, f: JsonlFile) -> T:
    """If a wrong record is another record of the file, say which."""
    for j, value in enumerate(f.records):
        if same(value, got_value):
            return T(f"（这是第 {j} 条记录）", f" (that is record {j})")
    return T("", "")


def expect_items(t, got, exp, indices, f: JsonlFile, hint: T | None = None, what=""):
    """Every read as the reference's; the first difference is named, with a hint."""
    n = len(f.records)
    if not isinstance(got, list) or len(got) != len(exp):
        t.fail(T("场景返回的读取结果数目不对", "the scenario returned the wrong number of reads"))
    for i, g, e in zip(indices, got, exp, strict=True):
        if not isinstance(g, dict):
            t.fail(T("场景返回了无法识别的结果", "the scenario returned something unrecognisable"))
        problem = item_problem(i, g, e, n)
        if problem is not None:
            extra = where_from(g["value"], f) if "value" in g and "value" in e else T("", "")
            message = T(what, what) + problem + extra + f.describe()
            if hint is not None:
                message = message + T(" —— ", " — ") + hint
            t.fail(message)


def check_read(t, f: JsonlFile, name, indices, *, hint=None, transform=None):
    """len() and dataset[i] for every index, against the reference on the same file."""
    got = result_dict(t, t.sub.scenario("read", name, indices, transform=transform),
                      ("len", "items"))
    exp = t.ref.scenario("read", name, indices, transform=transform)
    if got["len"] != exp["len"]:
        t.fail(T(f"len(dataset)：期望 {exp['len']}，得到 {got['len']}",
                 f"len(dataset): expected {exp['len']}, got {got['len']}") + f.describe()
               + T(" —— ", " — ") + (hint or length_hint(f, got["len"])))
    expect_items(t, got["items"], exp["items"], indices, f, hint)


def every_index(n, r, out_of_range=True):
    """Every index, shuffled, then every negative one, then some out of range."""
    indices = list(range(n))
    r.shuffle(indices)
    indices += [-k for k in range(1, n + 1)]
    if out_of_range:
        indices += [n, n + 1, n + r.randint(2, 1000), -n - 1, -n - r.randint(2, 1000)]
    return indices


# ---------------------------------------------------------------- public cases

EXAMPLE = (b'{"id": 0, "text": "hello"}\n'
           b"\n"
           b'{"id": 1, "text": "\xe6\x95\xb0\xe6\x8d\xae\xe9\x9b\x86 \xe2\x80\xa8 line '
           b'separator"}\r\n'
           b" \t \r\n"
           b'[2, "not an object", null]\n'
           b'{"id": 3, "text": "no newline at the end"}')


def example_file() -> JsonlFile:
    *lines, last = EXAMPLE.split(b"\n")
    f = JsonlFile(lines=[line + b"\n" for line in lines] + [last])
    f.records = [json.loads(line) for line in f.lines if line.strip(b" \t\r\n")]
    return f


@case(public=True, zh="题面里的例子：空行、\\r\\n、U+2028、最后一行没有换行",
      en="the statement's example: blank lines, \\r\\n, U+2028, no final newline")
def example_basic(t):
    f = example_file()
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, [0, 1, 2, 3, -1, -4, 4, -5])
    t.note("len 为 4；dataset[1] 的文本里有一个 U+2028，它不是换行",
           "len is 4; dataset[1]'s text holds a U+2028, which is not a line break")


@case(public=True, zh="transform 作用在解析后的记录上", en="transform applies to the parsed record")
def example_transform(t):
    f = make_file(t.random, 12, blank=0.2)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, every_index(12, t.random), transform="wrap")


@case(public=True, zh="DataLoader(num_workers=2, shuffle=True)（fork）",
      en="DataLoader(num_workers=2, shuffle=True) (fork)", timeout_s=60)
def example_dataloader(t):
    f = make_file(t.random, 60)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_loader(t, f, name, method="fork", batch_size=4, seed=1)


# ---------------------------------------------------------------- DataLoader


def loader_hint(failed: dict, method: str) -> T:
    """Why iterating a DataLoader over the dataset failed, from what was raised."""
    kind, message = failed.get("raised"), str(failed.get("message"))
    if "pickle" in message or kind == "PicklingError":
        return T("用 spawn 启动的 worker 会通过 pickle 拿到数据集：打开的文件对象不能 pickle。"
                 "要么每次读取时再打开，"
                 "要么在每个进程里第一次读取时打开，并在 __getstate__ 里去掉文件句柄",
                 "workers started with spawn get the dataset by pickle, and an open file "
                 "cannot be pickled: open the file when reading, or on the first read in each "
                 "process, and leave the handle out in __getstate__")
    if kind in ("JSONDecodeError", "UnicodeDecodeError", "ValueError", "KeyError"):
        return T("worker 读到了残缺的行：几个进程共用了 __init__ 里打开的同一个文件（fork "
                 "之后它们共享同一个"
                 "文件位置），一个进程 seek 之后另一个进程在读。"
                 "每个进程要有自己的文件句柄（比如记下 os.getpid()）",
                 "a worker read a torn line: the processes share one file opened in __init__ "
                 "(after fork they share its position), so one seeks while another reads. "
                 "Give every process a handle of its own (note os.getpid(), say)")
    return T(f"用 {method} 启动 worker 时 DataLoader 失败了", f"the DataLoader failed with "
             f"workers started by {method}")


def check_loader(t, f: JsonlFile, name, *, method, batch_size, seed, epochs=1,
                 transform=None):
    """Iterate DataLoader(dataset, shuffle=True, num_workers=2): every epoch delivers, in
    the order the sampler asked for them, the records the reference reads at those
    indices, read by both workers."""
    at = f.describe() + T(f"（DataLoader：{method}，batch_size={batch_size}）",
                          f" (DataLoader: {method}, batch_size={batch_size})")
    got = result_dict(t, t.sub.scenario("loader", name, method=method, workers=2,
                                        batch_size=batch_size, seed=seed, epochs=epochs,
                                        transform=transform), ("len", "epochs", "main"))
    n = len(f.records)
    exp = t.ref.scenario("read", name, list(range(n)), transform=transform)["items"]
    if got["len"] != n:
        t.fail(T(f"len(dataset)：期望 {n}，得到 {got['len']}", f"len(dataset): expected {n}, "
                 f"got {got['len']}") + at + T(" —— ", " — ") + length_hint(f, got["len"]))
    if isinstance(got.get("failed"), dict):
        failed = got["failed"]
        t.fail(T(f"遍历 DataLoader 时抛出了 {failed.get('raised')}: {failed.get('message')}",
                 f"iterating the DataLoader raised {failed.get('raised')}: "
                 f"{failed.get('message')}") + at + T(" —— ", " — ") + loader_hint(failed, method))
    for epoch, rec in enumerate(got["epochs"]):
        order, items = (rec.get("order"), rec.get("items")) if isinstance(rec, dict) else (0, 0)
        if not (isinstance(order, list) and sorted(order) == list(range(n))
                and isinstance(items, list) and len(items) == n):
            t.fail(T(f"第 {epoch} 个 epoch：期望 {n} 条记录", f"epoch {epoch}: expected {n} "
                     f"records") + at)
        for k, (i, g) in enumerate(zip(order, items, strict=True)):
            value = g.get("value") if isinstance(g, dict) else g
            if not same(value, exp[i].get("value")):
                t.fail(T(f"第 {epoch} 个 epoch 的第 {k} 条记录（dataset[{i}]）：期望 "
                         f"{shown(exp[i].get('value'))}，得到 {shown(value)}",
                         f"epoch {epoch}, record {k} of the loader (dataset[{i}]): expected "
                         f"{shown(exp[i].get('value'))}, got {shown(value)}")
                       + where_from(value, f) + at + T(" —— ", " — ")
                       + loader_hint({"raised": "ValueError", "message": ""}, method))
        workers = {g.get("worker") for g in items}
        pids = {g.get("pid") for g in items}
        t.expect(workers == {0, 1} and len(pids) == 2 and got["main"] not in pids, T(
            "记录应当由两个 worker 进程读取", "the records must be read by the two worker "
            "processes") + at)


# ---------------------------------------------------------------- hidden cases


@case(zh="随机文件：所有下标、负下标、越界", en="random files: every index, negative ones, "
      "out of range")
def random_files(t):
    for _ in range(3):
        n = t.random.randint(1, 400)
        f = make_file(t.random, n, lead=t.random.randint(0, 2), tail=t.random.randint(0, 2))
        with t.data_file(f.data, suffix=".jsonl") as name:
            check_read(t, f, name, every_index(n, t.random))


@case(zh="字符串里的 U+2028、U+2029、U+0085 不是换行",
      en="U+2028, U+2029 and U+0085 inside strings are not line breaks")
def unicode_breaks_in_strings(t):
    n = t.random.randint(100, 300)
    f = make_file(t.random, n, odd=0.35, blank=0.05)
    assert any(b in f.data for b in (b"\xe2\x80\xa8", b"\xc2\x85"))
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, every_index(n, t.random), hint=T(
            "只按 b'\\n' 分行：str.splitlines() 和 codecs 的按行读取会在 U+2028、U+2029、U+0085 "
            "处断开，"
            "而 JSON 字符串里允许直接出现这些字"
            "符", "split lines at b'\\n' only: str.splitlines() and "
            "codecs' line readers also break at U+2028, U+2029 and U+0085, which JSON strings "
            "may hold as they are"))


@case(zh="\\r\\n 结尾和只含空格、制表符、\\r 的行", en="\\r\\n endings and lines of only spaces, "
      "tabs and \\r")
def crlf_and_blank_lines(t):
    n = t.random.randint(100, 300)
    f = make_file(t.random, n, crlf=0.8, blank=0.6, lead=t.random.randint(1, 4),
                  tail=t.random.randint(1, 4), trailing_space=0.2)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, every_index(n, t.random), hint=T(
            "空行、只含空格/制表符/\\r 的行都不是记录；记录行可以以 \\r\\n 结尾（json.loads 把 "
            "\\r 当作空白）",
            "empty lines and lines of only spaces, tabs and \\r are not records; a record "
            "line may end in \\r\\n (json.loads takes \\r as whitespace)"))


@case(zh="文件结尾：有没有换行、结尾的空白行", en="the end of the file: with or without a "
      "newline, blank lines after the last record")
def file_endings(t):
    for final_newline, tail in ((False, 0), (True, 0), (True, 3), (False, 2)):
        n = t.random.randint(1, 30)
        f = make_file(t.random, n, blank=0.1, final_newline=final_newline, tail=tail)
        with t.data_file(f.data, suffix=".jsonl") as name:
            check_read(t, f, name, every_index(n, t.random))


@case(zh="空文件和只有空白行的文件：len 为 0", en="an empty file and a file of blank lines: "
      "len 0")
def empty_files(t):
    blank = JsonlFile(lines=[t.random.choice(BLANKS) + t.random.choice([b"\n", b"\r\n"])
                             for _ in range(t.random.randint(1, 6))])
    for f in (JsonlFile(), blank):
        with t.data_file(f.data, suffix=".jsonl") as name:
            check_read(t, f, name, [0, -1, 1, t.random.randint(2, 100)])


@case(zh="偏移量按字节算，不按字符算（非 ASCII 文本）", en="offsets count bytes, not characters "
      "(non-ASCII text)")
def byte_offsets(t):
    n = t.random.randint(200, 500)
    f = make_file(t.random, n, odd=0.25, crlf=0.5)
    indices = list(range(n - 1, -1, -1))  # from the end: every character miscount adds up
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, indices, hint=T(
            "seek 用的是字节偏移：用二进制模式（'rb'）读文件，按 len(line) 字节累加；文本模式下 "
            "len(line) 是字符数，"
            "中文一个字 3 字节、emoji 4 字节", "seek takes byte offsets: read the file in binary "
            "('rb') and add up len(line) in bytes; in text mode len(line) counts characters, "
            "and a Chinese character takes 3 bytes, an emoji 4"))


@case(zh="负下标：从末尾数，像 list 一样", en="negative indices count from the end, as for a "
      "list")
def negative_indices(t):
    n = t.random.randint(20, 200)
    f = make_file(t.random, n)
    indices = [-k for k in range(1, n + 1)]
    t.random.shuffle(indices)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, indices, hint=T("dataset[-1] 是最后一条记录，dataset[-len] "
                                               "是第一条：i += len",
                                              "dataset[-1] is the last record and "
                                              "dataset[-len] the first: i += len"))


@case(zh="越界：i == len、i > len、i < -len 抛出 IndexError",
      en="out of range: i == len, i > len and i < -len raise IndexError")
def index_errors(t):
    n = t.random.randint(1, 50)
    f = make_file(t.random, n, final_newline=t.random.random() < 0.5)
    indices = [n, -n - 1, n + 1, n + t.random.randint(2, 10**6), -n - t.random.randint(2, 10**6),
               0, n - 1, n, -n]
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, indices)


@case(zh="任意 JSON 值都可以是一条记录（数组、字符串、数、null）",
      en="any JSON value is a record (arrays, strings, numbers, null)")
def any_json_values(t):
    n = t.random.randint(50, 150)
    f = make_file(t.random, n, any_type=0.6)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_read(t, f, name, every_index(n, t.random), hint=T(
            "dataset[i] 就是 json.loads(这一行)，不管它是不是对象；不要用 if record: "
            "之类的判断跳过它",
            "dataset[i] is json.loads(the line), object or not; do not skip it with "
            "if record: or the like"))


@case(zh="transform 每次读取调用一次，__init__ 里不调用",
      en="transform runs once per read, never in __init__")
def transform_once(t):
    n = t.random.randint(20, 80)
    f = make_file(t.random, n, any_type=0.2)
    indices = [t.random.randrange(-n, n) for _ in range(30)]
    with t.data_file(f.data, suffix=".jsonl") as name:
        got = result_dict(t, t.sub.scenario("transform_calls", name, indices),
                          ("at_init", "reads"))
    t.expect(got["at_init"] == [], T(
        f"__init__ 调用了 transform {len(got['at_init'])} 次：transform 在每次 dataset[i] 时作用在"
        f"这条记录上，不是在建索引时", f"__init__ called transform {len(got['at_init'])} times: "
        f"transform applies to a record when dataset[i] reads it, not while the index is "
        f"built") + f.describe())
    for i, read in zip(indices, got["reads"], strict=True):
        record = f.records[i]
        expected_call = json.dumps(record, ensure_ascii=False, sort_keys=True)
        calls = read.get("calls") if isinstance(read, dict) else None
        t.expect(calls == [expected_call], T(
            f"dataset[{i}] 调用 transform {len(calls or [])} 次（期望 1 次），参数应当是 "
            f"json.loads 之后的"
            f"记录 {shown(record)}", f"dataset[{i}] called transform {len(calls or [])} times "
            f"(expected once), with the record as json.loads gives it, {shown(record)}")
            + f.describe())
        t.expect(same(read.get("value"), {"wrapped": record}), T(
            f"dataset[{i}]：期望 transform 的返回值 {shown({'wrapped': record})}，得到 "
            f"{shown(read.get('value'))}", f"dataset[{i}]: expected what transform returned, "
            f"{shown({'wrapped': record})}, got {shown(read.get('value'))}"))


@case(zh="数据集可以 pickle（读过之后也可以）", en="the dataset pickles (after reads too)")
def pickles(t):
    n = t.random.randint(30, 120)
    f = make_file(t.random, n)
    before = [t.random.randrange(n) for _ in range(t.random.randint(1, 5))]
    indices = every_index(n, t.random)
    with t.data_file(f.data, suffix=".jsonl") as name:
        got = t.sub.scenario("pickled", name, indices, reads_before=before)
        exp = t.ref.scenario("pickled", name, indices, reads_before=before)
    if isinstance(got, dict) and isinstance(got.get("pickle"), dict):
        p = got["pickle"]
        t.fail(T(f"读过 {before} 之后 pickle.dumps(dataset) 抛出了 {p.get('raised')}: "
                 f"{p.get('message')}", f"pickle.dumps(dataset) after reading {before} raised "
                 f"{p.get('raised')}: {p.get('message')}") + T(" —— ", " — ")
               + loader_hint(p, "spawn"))
    got = result_dict(t, got, ("len", "items"))
    t.expect(got["len"] == exp["len"], T(f"pickle 之后的 len：期望 {exp['len']}，得到 {got['len']}",
                                         f"len after pickling: expected {exp['len']}, got "
                                         f"{got['len']}"))
    expect_items(t, got["items"], exp["items"], indices, f, what="pickle.loads(pickle.dumps("
                 "dataset)): ")


@case(zh="DataLoader，两个 worker（fork），多个 epoch", en="a DataLoader with two workers (fork), "
      "several epochs", timeout_s=90)
def dataloader_fork(t):
    f = make_file(t.random, t.random.randint(2000, 4000), blank=0.1)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_loader(t, f, name, method="fork", batch_size=t.random.randint(1, 8),
                     seed=t.random.randrange(2**31), epochs=2, transform="wrap")


@case(zh="DataLoader，两个 worker（spawn：重新启动解释器）",
      en="a DataLoader with two workers (spawn: fresh interpreters)", timeout_s=150)
def dataloader_spawn(t):
    f = make_file(t.random, t.random.randint(200, 600), blank=0.1)
    with t.data_file(f.data, suffix=".jsonl") as name:
        check_loader(t, f, name, method="spawn", batch_size=t.random.randint(2, 16),
                     seed=t.random.randrange(2**31), transform="wrap")



# ---------------------------------------------------------------- memory

MEMORY_FILE_MB = 48  # the lazy-index case: parsed, about 8x this; as lines, 1.2-2.5x
BIG_FILE_MB = 112  # parsed it needs about 950 MB, more than the limit leaves


def bulk_case(t, size_mb):
    """A big file for the submission alone, with a sample of indices and their records."""
    lines = bulk_lines(t.random, size_mb * MB)
    records = records_of(lines)
    n = len(records)
    indices = [0, n - 1, -1, -n] + [t.random.randrange(-n, n) for _ in range(200)]
    expected = [{"value": json.loads(records[i])} for i in indices]
    return lines, n, indices, expected


def check_bulk(t, got, n, indices, expected, size_mb):
    at = T(f"（约 {size_mb} MB 的文件，{n} "
           f"条记录）", f" (a file of about {size_mb} MB, {n} records)")
    got = result_dict(t, got, ("len", "items"))
    if got["len"] != n:
        t.fail(T(f"len(dataset)：期望 {n}，得到 {got['len']}", f"len(dataset): expected {n}, got "
                 f"{got['len']}") + at)
    f = JsonlFile()  # what where_from needs is not worth 100 MB here
    expect_items(t, got["items"], expected, indices, f)


def held(t, run, name, indices):
    """Run the hold scenario; the job's memory at each of its questions (from outside
    where the launcher can measure it, else as the scenario reports it), and its result."""
    stream = run.stream("hold", name, indices)
    marks, inside = {}, False
    for event in stream:
        if event.kind is Kind.ASK and isinstance(event.data, dict):
            outside = run.memory_in_use()
            if outside is None:
                inside, outside = True, event.data.get("rss")
            marks[event.data.get("moment")] = outside if isinstance(outside, int) else 0
            event.reply(None)
    if stream.result is None or set(marks) != {"before", "built", "read"}:
        t.fail(T("场景没有正常结束", "the scenario did not end normally"))
    return marks, stream.result.value, inside


@case(zh="懒加载：数据集只保留字节偏移量（从外部测量内存）",
      en="lazy: the dataset keeps byte offsets only (memory measured from outside)",
      timeout_s=120)
def lazy_index_memory(t):
    lines, n, indices, expected = bulk_case(t, MEMORY_FILE_MB)
    size = sum(map(len, lines))
    with t.data_file(chunked(lines), suffix=".jsonl", roles=("sub",)) as name, \
            t.fresh() as run:
        marks, got, inside = held(t, run, name, indices)
    check_bulk(t, got, n, indices, expected, MEMORY_FILE_MB)
    how = T("（进程自己报告的内存）", " (as the process reports it)") if inside else T("", "")
    for moment, zh, en in (("built", "__init__ 之后", "after __init__"),
                           ("read", f"读了 {len(indices)} 条记录之后",
                            f"after reading {len(indices)} records")):
        kept = marks[moment] - marks["before"]
        t.expect(kept <= MEMORY_SHARE * size, T(
            f"{zh}，任务多占了 {kept / MB:.1f} MB 内存{how.zh}，而文件是 {size / MB:.1f} MB、"
            f"{n} 条记录：数据集保存了文件的内容（readlines()、f.read()、解析好的记录……）。"
            f"只保存每条记录的字节偏移量（array('q') 或 numpy 数组，每条 8 字节），读取时再 seek "
            f"过去解析那一行；"
            f"最多允许 {MEMORY_SHARE:.0%} 的文件大小",
            f"{en}, the job held {kept / MB:.1f} MB more{how.en}, for a file of "
            f"{size / MB:.1f} MB and {n} records: the dataset keeps the file's contents "
            f"(readlines(), f.read(), parsed records ...). Keep the byte offset of each record "
            f"only (an array('q') or a numpy array: 8 bytes a record) and seek to the line "
            f"when it is read; at most {MEMORY_SHARE:.0%} of the file's size is allowed"))


@case(zh="大文件：解析整个文件放不进内存限制，索引可以",
      en="a big file: parsing it all does not fit the memory limit, an index does",
      timeout_s=120)
def big_file(t):
    lines, n, indices, expected = bulk_case(t, BIG_FILE_MB)
    with t.data_file(chunked(lines), suffix=".jsonl", roles=("sub",)) as name, \
            t.fresh() as run:
        got = run.scenario("read", name, indices)
    check_bulk(t, got, n, indices, expected, BIG_FILE_MB)


# ---------------------------------------------------------------- throughput

READS = 10_000
SPEED_FILE_MB = 20


@workload
def random_reads(device):
    """Build the dataset over a ~20 MB file and read 10,000 random indices (negative ones
    included), as a shuffling sampler would. Every timed call gets a file of its own (the
    same records, in another order), and its digest is checked against the reference's."""
    pool = {}

    def make(rng, put):
        if "lines" not in pool:
            r = random.Random(int(torch.randint(2**62, (), generator=rng)))
            pool["lines"] = bulk_lines(r, SPEED_FILE_MB * MB)
            pool["n"] = len(records_of(pool["lines"]))
        lines, n = pool["lines"], pool["n"]
        order = torch.randperm(len(lines), generator=rng).tolist()
        name = put(b"".join([lines[k] for k in order]), ".jsonl")
        indices = torch.randint(-n, n, (READS,), generator=rng).tolist()
        return [name, indices], {}

    def check(got, exp):
        if got == exp:
            return True
        return T(f"期望 {shown(exp, 300)}，得到 {shown(got, 300)}",
                 f"expected {shown(exp, 300)}, got {shown(got, 300)}")

    return Workload(fn="read_many", target="fixture", prepare="prepare_reads", make=make,
                    check=check, files=True, warmup=1)
