"""The untrusted side: imports a submission and answers the grader's requests.

This runs inside the sandbox, in the same process as the learner's code, so nothing it
says is trusted: it only carries data. The grader generates inputs, keeps the clock and
compares. The runner speaks :mod:`sandbox.protocol` on one inherited socket; stdout and
stderr belong to the submission (the grader caps and keeps them, they mean nothing).

Conversation::

    grader: HELLO {submission, fixture?, names, threads}
    runner: READY {names, torch, cuda, pid}        or IMPORT_ERROR {where, type, message, ...}
    grader: CALL {target: "sub"|"fixture", fn, args, kwargs, return_args}
    runner: EVENT {...}* / ASK {...} (grader: REPLY {...}) ...   then RESULT {value, args?}
                                                                 or ERROR {type, message, ...}
    grader: STAGE {id, target, fn, args, kwargs}  runner: DONE {id}
    grader: RUN {id}                              runner: RESULT {value} or ERROR
    grader: BYE                                   (the runner exits)

Start it as ``python -m sandbox.runner --fd N`` (a socket inherited on fd N) or call
:func:`serve` from a forked template process.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.machinery
import importlib.util
import os
import socket
import sys
import traceback
from collections.abc import Iterator
from types import CodeType, ModuleType
from typing import Any

import torch

from sandbox.channel import Channel
from sandbox.protocol import Kind, ProtocolError, decode, encode

MAX_MESSAGE = 4000
# The largest tensor data of a call whose arguments go back that is kept during the call,
# to send only "unchanged" when they are (Runner.call): larger inputs are not held twice.
KEEP_SENT_BYTES = 16 * 2**20
MAX_TYPE_NAME = 200  # a class's name is the submission's choice too (it may be megabytes)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
# glibc's initial values, no longer adapted: every allocation above 128 KiB is a fresh mapping
MMAP_THRESHOLD = 128 * 1024
TRIM_THRESHOLD = 128 * 1024


def steady_malloc() -> bool:
    """Fix glibc's mmap and trim thresholds, for every runner alike.

    By default glibc raises its mmap threshold to the size of whatever mapped block a
    process frees: the same code then gets its megabyte-sized tensors from fresh mappings
    in one runner and from the reused heap in another, at a different speed. Measured on
    padding-collate's speed check, left padding: ``pad_sequence`` read 0.54x in one judging
    and 0.68x in the next; with the thresholds fixed, 0.735-0.764x over three judgings.
    Fixed high (32 MiB, everything from the heap) was worse: length-bucketing's
    ``numpy_noise_drop_longest`` then varied by 1.18-1.29x between judgings, by 1.07x with
    these values. Returns False
    where the C library has no ``mallopt`` (not glibc): the defaults stay."""
    import ctypes

    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        # The runner's environment set glibc's thresholds itself: only bench/memory_reuse.py
        # does (a candidate it compares with these); leave them as it made them.
        return True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


class Context:
    """What a scenario fixture gets besides the submission: a way to talk to the grader
    while it runs (progress events, questions such as "kill me now?")."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def emit(self, data: Any) -> None:
        """Tell the grader something (a logged loss, a step). No answer."""
        self._channel.send(Kind.EVENT, data)

    def ask(self, data: Any) -> Any:
        """Tell the grader something and wait for its reply (it may kill us instead)."""
        self._channel.send(Kind.ASK, data)
        msg = self._channel.recv()
        if msg.kind is not Kind.REPLY:
            raise ProtocolError(f"expected a reply, got {msg.kind}")
        return msg.body


class SourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file from its source (never from a ``__pycache__`` that an earlier
    runner of the job could have planted) and keeps every code object compiled from it:
    a frame running one of them is a frame of the file itself. Code that the file makes
    at run time under its own name (``compile(..., __file__, ...)``) is not: its line
    numbers are the submission's to choose."""

    def __init__(self, fullname: str, path: str) -> None:
        super().__init__(fullname, path)
        self.own: set[CodeType] = set()

    def get_code(self, fullname: str) -> CodeType:
        code = self.source_to_code(self.get_data(self.path), self.path)
        self.own = set(_code_objects(code))
        return code


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        todo += [k for k in c.co_consts if isinstance(k, CodeType)]


def _load(loader: SourceLoader) -> ModuleType:
    """Import ``loader``'s file as its module. When the file is named after the module
    (``submission.py``, ``judge_fixture.py``), its folder goes on ``sys.path`` (last): a
    process that multiprocessing starts with ``spawn`` or ``forkserver`` (a DataLoader
    worker) is a fresh interpreter that gets the dataset by pickle, which names its class
    by module, and imports that module by name."""
    spec = importlib.util.spec_from_file_location(loader.name, loader.path, loader=loader)
    if spec is None:
        raise ImportError(f"cannot load {loader.path}")
    folder, file = os.path.split(os.path.abspath(loader.path))
    if file == f"{loader.name}.py" and folder not in sys.path:
        sys.path.append(folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module
    loader.exec_module(module)
    return module


def _safe_str(e: BaseException) -> str:
    try:
        return str(e)[:MAX_MESSAGE]
    except Exception:
        return "<the exception's message could not be shown>"


def _type_name(e: BaseException) -> str:
    try:
        name = type(e).__name__
        if not isinstance(name, str):
            raise TypeError
    except Exception:
        return "<unnamed exception>"
    return name if len(name) <= MAX_TYPE_NAME else name[:MAX_TYPE_NAME] + "..."


def _describe(e: BaseException, own: set[CodeType] | None = None) -> dict[str, Any]:
    """An exception as data: its type, message and the frames of the learner's file
    (frames running code compiled from it: ``own``, see SourceLoader)."""
    if isinstance(e, SyntaxError):
        # The compiler's own report says where; the import machinery's frames do not help.
        if e.filename:
            e.filename = os.path.basename(e.filename)
        return {"type": _type_name(e), "message": _safe_str(e), "line": e.lineno,
                "traceback": "".join(traceback.format_exception_only(type(e), e))[-MAX_MESSAGE:]}
    own = own or set()
    walked = list(traceback.walk_tb(e.__traceback__))
    frames = traceback.StackSummary.extract(iter(walked))
    mine = [f for f, (frame, _) in zip(frames, walked, strict=True) if frame.f_code in own]
    shown = mine or [f for f in frames if not f.filename.startswith("<frozen")][-3:]
    tb = "".join(f'  File "{os.path.basename(f.filename)}", line {f.lineno}, in {f.name}\n'
                 + (f"    {f.line}\n" if f.line else "") for f in shown)
    return {
        "type": _type_name(e),
        "message": _safe_str(e),
        "traceback": tb[-MAX_MESSAGE:],
        "line": mine[-1].lineno if mine else None,
    }


class Runner:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.sol: ModuleType | None = None
        self.fixture: ModuleType | None = None
        self.own: set[CodeType] = set()  # the submission's code objects
        self.staged: dict[Any, tuple[Any, list, dict]] = {}
        self.context = Context(channel)
        self.cuda = False

    def hello(self, body: dict[str, Any]) -> bool:
        torch.set_num_threads(int(body.get("threads") or 1))
        steady_malloc()  # before the submission allocates anything
        fixture = body.get("fixture")
        if fixture:
            loader = SourceLoader("judge_fixture", fixture)
            try:
                self.fixture = _load(loader)
            except BaseException as e:
                self.channel.send(Kind.IMPORT_ERROR,
                                  {"where": "fixture", **_describe(e, loader.own)})
                return False
        loader = SourceLoader(body.get("module", "submission"), body["submission"])
        try:
            self.sol = _load(loader)
        except BaseException as e:  # SyntaxError, ImportError, sys.exit() at import ...
            self.channel.send(Kind.IMPORT_ERROR,
                              {"where": "submission", **_describe(e, loader.own)})
            return False
        self.own = loader.own
        names = list(body.get("names") or [])
        missing = [n for n in names if not hasattr(self.sol, n)]
        if missing:
            self.channel.send(Kind.IMPORT_ERROR, {"where": "submission", "type": "NameError",
                                                  "message": "missing " + ", ".join(missing),
                                                  "missing": missing, "traceback": ""})
            return False
        self.cuda = bool(body.get("device") == "cuda" and torch.cuda.is_available())
        # Everything imported so far (torch, the fixture, the submission) lives as long as
        # the runner: move it out of the collector's sight, so that the collection before
        # each timed call scans only what the calls made (milliseconds, not ~80 ms).
        gc.freeze()
        self.channel.send(Kind.READY, {"names": names, "torch": torch.__version__,
                                       "pid": os.getpid(), "cuda": self.cuda})
        return True

    def _target(self, body: dict[str, Any]) -> Any:
        fn = body.get("fn")
        if not isinstance(fn, str) or fn.startswith("_"):
            raise ProtocolError(f"bad function name {fn!r}")
        if body.get("target") == "fixture":
            if self.fixture is None:
                raise ProtocolError("this problem has no fixture")
            scenario = getattr(self.fixture, fn)
            return lambda *a, **k: scenario(self.sol, self.context, *a, **k)
        return getattr(self.sol, fn)

    def stage(self, body: dict[str, Any]) -> None:
        """Keep a call ready for RUN. With ``prepare`` (a fixture scenario), build its
        state now, so that only the learner's part is timed."""
        args, kwargs = list(body.get("args") or []), dict(body.get("kwargs") or {})
        try:
            fn = self._target(body)
            prepare = body.get("prepare")
            if prepare:
                state = self._target({"target": "fixture", "fn": prepare})(*args, **kwargs)
                args, kwargs = [state], {}
        except BaseException as e:
            self.channel.send(Kind.ERROR, _describe(e, self.own))
            return
        self.staged[body.get("id")] = (fn, args, kwargs)
        cpu = body.get("cpu")
        if isinstance(cpu, int) and not isinstance(cpu, bool):
            # The grader times the submission and the reference on the same core, so that a
            # busy other core, or a migration, does not favour one side for a whole judging.
            with contextlib.suppress(OSError, ValueError):
                os.sched_setaffinity(0, {cpu})
        # Collect now, untimed, so that a collection of earlier garbage does not land
        # inside the timed call of whichever side happens to trigger it.
        gc.collect()
        self.channel.send(Kind.DONE, {"id": body.get("id")})

    def call(self, fn: Any, args: list, kwargs: dict, return_args: bool,
             sent: tuple[dict[str, Any], bytes, bytearray] | None = None) -> None:
        """Call ``fn`` and send its RESULT (or ERROR). With ``return_args``, the arguments
        as they are after the call go back too; with ``sent`` (the CALL's body and frame,
        as received), they are encoded again first, and when that gives the very bytes
        that came in, only ``args_unchanged`` goes back: the grader still holds them."""
        try:
            value = fn(*args, **kwargs)
            if self.cuda:
                # The grader's clock stops when the result arrives: finish the GPU's work.
                torch.cuda.synchronize()
        except BaseException as e:  # the learner's exceptions are data, SystemExit included
            _flush_output()
            self.channel.send(Kind.ERROR, _describe(e, self.own))
            return
        _flush_output()
        body: dict[str, Any] = {"value": value}
        if return_args and sent is not None and _unchanged(sent, args, kwargs):
            body["args_unchanged"] = True
        elif return_args:
            body["args"] = args
            body["kwargs"] = kwargs
        try:
            self.channel.send(Kind.RESULT, body)
        except (TypeError, ValueError, OverflowError) as e:
            # Encoding failed before a byte went out (too large, too many tensors): say so
            # as the call's error instead of dying with a traceback nobody sees.
            self.channel.send(Kind.ERROR, {
                "type": "ResultNotSendable", "line": None, "traceback": "",
                "message": f"the returned value cannot be sent to the judge: {_safe_str(e)}"})

    def serve(self) -> None:
        while True:
            data, blob = self.channel.recv_raw()
            msg = decode(data, blob, max_blob=self.channel.max_blob)
            body = msg.body if isinstance(msg.body, dict) else {}
            # A call whose arguments go back keeps its frame to compare them with after
            # the call (see call); any other frame is let go at once.
            kept = (blob if msg.kind is Kind.CALL and body.get("return_args")
                    and len(blob) <= KEEP_SENT_BYTES else None)
            del blob
            if msg.kind is Kind.BYE:
                return
            if msg.kind is Kind.CALL:
                try:
                    fn = self._target(body)
                except AttributeError as e:
                    self.channel.send(Kind.ERROR, _describe(e, self.own))
                    continue
                self.call(fn, list(body.get("args") or []), dict(body.get("kwargs") or {}),
                          bool(body.get("return_args")),
                          None if kept is None else (body, data, kept))
            elif msg.kind is Kind.STAGE:
                self.stage(body)
            elif msg.kind is Kind.RUN:
                fn, args, kwargs = self.staged.pop(body.get("id"))
                gc.disable()  # the same for the submission and the reference
                try:
                    self.call(fn, args, kwargs, False)
                finally:
                    gc.enable()
                # The call's inputs and state go now, after its RESULT (the clock has
                # stopped), not when the next RUN rebinds these names inside its timed call.
                del fn, args, kwargs
            else:
                raise ProtocolError(f"unexpected message {msg.kind}")


def _unchanged(sent: tuple[dict[str, Any], bytes, bytearray], args: list,
               kwargs: dict) -> bool:
    """Whether the call's arguments encode, after the call, to the frame they came in:
    nothing the grader could see of them changed (the same JSON, the same tensor bytes)."""
    body, data, blob = sent
    try:
        frame = encode(Kind.CALL, dict(body, args=args, kwargs=kwargs), strict=False)
    except Exception:  # the learner's objects: whatever they raise, send them as they are
        return False
    return frame.buffers[1] == data and b"".join(frame.buffers[2:]) == blob


def _flush_output() -> None:
    """What the call printed goes into the output pipe before its answer goes out, so the
    grader can attribute it to the case that made the call."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # the submission may have replaced or closed them
            pass


def serve(sock: socket.socket) -> None:
    """Run the conversation on a connected socket until BYE or the channel closes."""
    channel = Channel(sock, strict=False)
    runner = Runner(channel)
    msg = channel.recv()
    if msg.kind is not Kind.HELLO or not isinstance(msg.body, dict):
        raise ProtocolError("the conversation must start with HELLO")
    if runner.hello(msg.body):
        runner.serve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, required=True, help="the inherited socket's fd")
    args = parser.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    try:
        serve(sock)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    # Skip interpreter teardown: a submission's atexit hooks or threads must not delay us.
    os._exit(0)


if __name__ == "__main__":
    main()
