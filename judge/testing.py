"""The API a problem's ``tests.py`` is written against.

Test cases are plain functions in the trusted grader, run in source order::

    from judge.testing import case

    @case(public=True, zh="基本用法", en="basic usage")
    def example_basic(t):
        batch = [...]
        got = t.sub.collate(batch, pad_id=0)        # the submission, through the protocol
        exp = t.ref.collate(batch, pad_id=0)        # the reference, the same way
        t.expect_equal(got, exp, "collate(batch)")

* ``t.sub`` and ``t.ref`` call the submission's and the reference's top-level names; a
  scenario from ``fixture.py`` is called with ``t.sub.scenario(name, ...)``.
* ``t.rng`` (a seeded ``torch.Generator``) and ``t.random`` (a ``random.Random``) make the
  case's inputs. Their seed comes from the submission's secret seed and the case's name.
* ``t.expect_*`` and ``t.fail`` end the case as wrong_answer with a message in both
  languages. An exception the submission raises and the case does not expect ends it as
  runtime_error; a bug in the case itself is an internal_error.
* Public cases (``public=True``; the ones named ``example_*`` are the examples) are shown
  in full and run by ``practice/judge.py``; hidden ones show their name and one-line
  ``zh``/``en`` category only.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, Protocol

import torch

from judge import compare
from judge.calls import Pending
from judge.i18n import T
from judge.jobfiles import JobFiles, JobFolderFull
from judge.session import (
    Budget,
    CallResult,
    Event,
    RunnerSession,
    Session,
    SessionSource,
    Stream,
    SubmissionError,
)
from sandbox.launch import OTHER_HASH_SEED

CASE_ATTR = "__judge_case__"
WORKLOAD_ATTR = "__judge_workload__"


class CaseFailed(Exception):
    """The submission's answer is wrong; the message says how (both languages)."""

    def __init__(self, message: T) -> None:
        self.message = message
        super().__init__(message.en)


class CaseSkipped(Exception):
    """This machine cannot run the case (``t.skip``): its torch lacks what the case needs.
    Like a CUDA case on a machine without a GPU, it is neither a failure nor counted."""

    def __init__(self, message: T) -> None:
        self.message = message
        super().__init__(message.en)


class ReferenceFailed(Exception):
    """The reference itself failed: the package is broken (internal_error)."""


# (rtol, atol) by dtype: torch.testing.assert_close's defaults, which suit each precision
# (float32 sums of a few thousand terms differ by ~1e-6 relative from another order).
TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
              torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7),
              torch.complex64: (1.3e-6, 1e-5), torch.complex128: (1e-7, 1e-7)}


def tolerances(expected: Any) -> tuple[float, float]:
    """expect_close's default (rtol, atol) for an expected value."""
    dtype = expected.dtype if isinstance(expected, torch.Tensor) else torch.float64
    return TOLERANCES.get(dtype, (0.0, 0.0))  # integer and bool tensors: exact


def as_reference(text: str) -> str:
    """A reference's error as its author knows it: the reference's runner loads it as
    ``submission.py`` (like every runner), which its traceback would otherwise name."""
    return re.sub(r"\bsubmission\.py\b", "reference.py", text)


# ---------------------------------------------------------------- declaring cases


@dataclass(frozen=True)
class CaseSpec:
    name: str
    fn: Callable[[Ctx], None]
    public: bool
    category: T
    device: str = "cpu"
    timeout_s: float | None = None
    line: int = 0

    @property
    def is_example(self) -> bool:
        return self.public and self.name.startswith("example")

    @property
    def visibility(self) -> str:
        return "public" if self.public else "hidden"


def case(*, zh: str, en: str, public: bool = False, device: str = "cpu",
         timeout_s: float | None = None) -> Callable:
    """Declare a test case. ``zh``/``en``: its one-line category, shown for hidden cases
    too. ``device="cuda"`` skips the case where no GPU is available. ``timeout_s``
    overrides the problem's ``limits.case_wall_s``."""

    def mark(fn: Callable) -> Callable:
        setattr(fn, CASE_ATTR, {"public": public, "category": T(zh, en), "device": device,
                                "timeout_s": timeout_s})
        return fn

    return mark


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    fn: Callable


def workload(fn: Callable) -> Callable:
    """Declare a throughput workload: ``fn(device)`` returns a judge.throughput.Workload."""
    setattr(fn, WORKLOAD_ATTR, True)
    return fn


@dataclass(frozen=True)
class Suite:
    cases: tuple[CaseSpec, ...]
    workloads: dict[str, WorkloadSpec]

    def select(self, *, public_only: bool = False, examples_only: bool = False,
               names: list[str] | None = None) -> list[CaseSpec]:
        chosen = [c for c in self.cases
                  if (not public_only or c.public) and (not examples_only or c.is_example)]
        if names:
            chosen = [c for c in chosen if c.name in names]
        return chosen


class HasTests(Protocol):
    """What :func:`collect` needs of a package (a judge.package.Problem): named here, not
    imported, because the package imports this module to collect its tests."""

    def load_tests_module(self) -> ModuleType: ...


def collect(problem: HasTests) -> Suite:
    """Import a package's tests.py and gather its cases in source order."""
    module = problem.load_tests_module()
    cases, workloads = [], {}
    for name, obj in vars(module).items():
        if not callable(obj):
            continue
        spec = getattr(obj, CASE_ATTR, None)
        if spec is not None:
            cases.append(CaseSpec(name=name, fn=obj, line=obj.__code__.co_firstlineno, **spec))
        if getattr(obj, WORKLOAD_ATTR, False):
            workloads[name] = WorkloadSpec(name, obj)
    cases.sort(key=lambda c: c.line)
    seen_hidden = next((c.name for c in cases if not c.public), None)
    for c in cases:
        if c.public and seen_hidden is not None and c.line > _line(cases, seen_hidden):
            # Output printed during a case is shown for public cases; with every public
            # case first, nothing a hidden case makes the submission print can leak.
            raise ValueError(f"tests.py: public case {c.name} comes after hidden case "
                             f"{seen_hidden}; put public cases first")
        if c.name.startswith("example") and not c.public:
            raise ValueError(f"tests.py: {c.name} is named as an example but is not public")
    return Suite(tuple(cases), workloads)


def _line(cases: list[CaseSpec], name: str) -> int:
    return next(c.line for c in cases if c.name == name)


def case_seed(seed: int, name: str) -> int:
    """A case's own seed: stable for a (submission seed, case name) pair."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# ---------------------------------------------------------------- calling the code


class Proxy:
    """``proxy.name(*args, **kwargs)`` calls a top-level name of the code in a runner."""

    def __init__(self, ctx: Ctx, role: str) -> None:
        self._ctx = ctx
        self._role = role

    def _session(self) -> Session:
        return self._ctx._session(self._role)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs).value

    def call(self, fn: str, *args: Any, return_args: bool = False, **kwargs: Any) -> CallResult:
        """Call ``fn``; with ``return_args`` the result also holds the arguments as they
        were after the call (to check that inputs were not modified)."""
        return self._run(lambda s: s.call("sub", fn, list(args), kwargs,
                                          return_args=return_args))

    def begin(self, fn: str, *args: Any, return_args: bool = False, **kwargs: Any
              ) -> Pending:
        """Start ``fn`` now and take its result later (``pending.value`` or ``.result``,
        which raise what the call would): meanwhile the other runner computes too. Calls
        begun one after the other go out together: begin all of a case's calls, then read
        them, and it waits for about one round trip (docs/writing-problems.md, §10)."""
        return self._begin("sub", fn, list(args), kwargs, return_args)

    def scenario(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run fixture.py's ``name(sol, ctx, *args, **kwargs)`` and return its value."""
        return self._run(lambda s: s.call("fixture", name, list(args), kwargs)).value

    def begin_scenario(self, name: str, *args: Any, **kwargs: Any) -> Pending:
        """:meth:`begin` for fixture.py's scenario ``name``: begin the reference's and the
        submission's, then read both, and the two runners compute at once."""
        return self._begin("fixture", name, list(args), kwargs, False)

    def _begin(self, target: str, fn: str, args: list, kwargs: dict, return_args: bool
               ) -> Pending:
        session = self._session()
        begin = getattr(session, "begin", None)
        if begin is None:  # a practice pack's replay or recording: at the first look
            return Pending(lambda: self._run(lambda s: s.call(target, fn, args, kwargs,
                                                              return_args=return_args)))
        finish = begin(target, fn, args, kwargs, return_args=return_args)
        return Pending(lambda: self._run(lambda _: finish()))

    def _run(self, action: Callable[[Session], CallResult]) -> CallResult:
        session = self._session()
        try:
            return action(session)
        except SubmissionError as e:
            if self._role == "ref":
                raise ReferenceFailed(as_reference(f"the reference raised {e}\n{e.traceback}")
                                      ) from None
            raise


class Run:
    """A runner process of its own, for scenarios that kill and restart (``t.fresh()``)."""

    def __init__(self, session: RunnerSession) -> None:
        self.session = session

    def stream(self, name: str, *args: Any, **kwargs: Any) -> Stream:
        """Start fixture scenario ``name`` and iterate over its events (answer ASKs with
        ``event.reply(...)``, or ``kill()`` the process). ``stream.result`` afterwards."""
        return self.session.stream("fixture", name, list(args), kwargs)

    def scenario(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run fixture scenario ``name`` to its end (questions answered None); its value."""
        return self.session.call("fixture", name, list(args), kwargs).value

    def kill(self) -> None:
        self.session.kill()

    def memory_in_use(self) -> int | None:
        """What this process and every process it started hold now, measured from outside
        (see :meth:`Ctx.memory_in_use`); None where the launcher cannot tell."""
        return self.session.memory_bytes()

    def path_inside(self, host_path: Path) -> str:
        self.session.ready()
        assert self.session.process is not None
        return self.session.process.path_inside(host_path)


@dataclass
class Ctx:
    """What a test case gets: seeded randomness, the two proxies, and expectations."""

    seed: int
    public: bool
    budget: Budget
    sessions: SessionSource  # (role, fresh, *, hash_seed=None)
    workdirs: dict[str, Path]
    device: str = "cpu"
    rng: torch.Generator = field(init=False)
    random: random.Random = field(init=False)
    notes: list[T] = field(default_factory=list)
    error_hints: list[Callable[[SubmissionError], T | None]] = field(default_factory=list)
    _fresh: list[RunnerSession] = field(default_factory=list)
    _files: int = 0

    def __post_init__(self) -> None:
        self.rng = torch.Generator().manual_seed(self.seed)
        self.random = random.Random(self.seed)
        self.sub = Proxy(self, "sub")
        self.ref = Proxy(self, "ref")

    def _session(self, role: str) -> Session:
        session = self.sessions(role, False)
        session.budget = self.budget if role == "sub" else Budget(self.budget.seconds * 10 + 30)
        return session

    def workdir(self, role: str = "sub") -> Path:
        """The host folder that the role's runner sees as its working directory."""
        return self.workdirs[role]

    @contextmanager
    def data_file(self, data: bytes | Iterable[bytes], *, suffix: str = "",
                  roles: tuple[str, ...] = ("sub", "ref")) -> Iterator[str]:
        """Write ``data`` (bytes, or chunks of bytes) into the job folder of each role's
        runner, read-only, and yield its name: the path the runners open it by (relative
        to their working directory). The file is removed when the block ends. It is made
        by the grader, never through a name the submission planted (judge.jobfiles), and
        named from the case's seed: a public case's name is the same on every machine. A
        role without a folder of its own (the reference, when a practice pack replays its
        recorded answers) is left out."""
        self._files += 1
        folders = {r: self.workdirs[r] for r in roles if r in self.workdirs}
        files = JobFiles(folders, f"{self.seed}:{self._files}")
        try:
            name = files.put(data, suffix)
        except JobFolderFull as e:
            self.fail(e.message)
        try:
            yield name
        finally:
            files.remove_all()

    def memory_in_use(self, role: str = "sub") -> int | None:
        """Bytes the role's runner and every process it started (DataLoader workers) hold
        now, measured from outside by the kernel (the job's memory cgroup): a number the
        submission cannot fake. None where the launcher cannot tell (no sandbox, or a
        sandbox without cgroups)."""
        return self._session(role).memory_bytes()

    @contextmanager
    def fresh(self, role: str = "sub", *, other_hashes: bool = False,
              hash_seed: int | None = None) -> Iterator[Run]:
        """A new runner process for ``role``, killed when the block ends. For results
        that must agree across processes, as ``hash(str)`` does not: ``other_hashes``, a
        runner whose str hashes differ from every shared runner's (PYTHONHASHSEED 1, the
        others have 0; forked warm like them), or ``hash_seed``, a PYTHONHASHSEED of your
        choice (such a runner starts cold: about a second)."""
        if other_hashes and hash_seed not in (None, OTHER_HASH_SEED):
            raise ValueError("other_hashes is PYTHONHASHSEED 1: do not give hash_seed too")
        session = self.sessions(role, True, hash_seed=OTHER_HASH_SEED if other_hashes
                                else hash_seed)
        session.budget = self.budget if role == "sub" else Budget(self.budget.seconds * 10 + 30)
        self._fresh.append(session)
        try:
            yield Run(session)
        finally:
            session.close()

    # ---------------------------------------------------------------- expectations
    def fail(self, zh: str | T, en: str | None = None) -> NoReturn:
        raise CaseFailed(zh if isinstance(zh, T) else T(zh, en if en is not None else zh))

    def expect(self, ok: bool, zh: str | T, en: str | None = None) -> None:
        if not ok:
            self.fail(zh, en)

    def _check(self, problem: T | None, hint: T | None) -> None:
        if problem is not None:
            if hint is not None:
                problem = problem + T(" —— ", " — ") + hint
            raise CaseFailed(problem)

    def expect_equal(self, got: Any, expected: Any, what: str, hint: T | None = None) -> None:
        """Deep equality (tensors: dtype, shape and every value)."""
        self._check(compare.value_equal(got, expected, what=what), hint)

    def expect_close(self, got: Any, expected: Any, what: str, *, rtol: float | None = None,
                     atol: float | None = None, hint: T | None = None) -> None:
        """A tensor of the expected dtype and shape, or a float, within ``atol + rtol *
        |expected|``; tolerances left out are torch.testing.assert_close's for the
        expected dtype (:data:`TOLERANCES`; a Python float is a float64)."""
        default_rtol, default_atol = tolerances(expected)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        if isinstance(expected, torch.Tensor):
            problem = compare.tensor_close(got, expected, what=what, rtol=rtol, atol=atol)
        else:
            problem = compare.float_close(got, float(expected), what=what, rtol=rtol, atol=atol)
        self._check(problem, hint)

    def expect_raises(self, exc_type: str | tuple[str, ...], action: Callable[[], Any],
                      what: str, hint: T | None = None) -> SubmissionError:
        """``action`` (a call into the submission) must raise ``exc_type`` (a name, such
        as "ValueError"; subclasses by name are not resolved, so name them too)."""
        names = (exc_type,) if isinstance(exc_type, str) else exc_type
        try:
            action()
        except SubmissionError as e:
            if e.type in names:
                return e
            self._check(T(f"{what}：期望抛出 {' / '.join(names)}，实际抛出 {e.type}: {e.message}",
                          f"{what}: expected {' / '.join(names)}, but it raised "
                          f"{e.type}: {e.message}"), hint)
            raise AssertionError("unreachable") from None
        self._check(T(f"{what}：期望抛出 {' / '.join(names)}，但它正常返回了",
                      f"{what}: expected {' / '.join(names)}, but it returned normally"), hint)
        raise AssertionError("unreachable")

    def note(self, zh: str, en: str) -> None:
        """Add a line to the case's message even if it passes (shown for public cases)."""
        self.notes.append(T(zh, en))

    def skip(self, zh: str, en: str) -> NoReturn:
        """End the case as skipped because this machine cannot run it (say why: "this
        torch has no GradScaler for the CPU"). It is not a failure and is not counted in
        the total, like a CUDA case on a machine without a GPU."""
        raise CaseSkipped(T(zh, en))

    def explain_errors(self, explain: Callable[[SubmissionError], T | None]) -> None:
        """Give the learner a hint when the submission raises during this case:
        ``explain(error)`` sees the exception's ``type`` and ``message`` and returns a hint
        or None. The verdict stays runtime_error; the hint follows the exception's message
        (say, for the errors a library raises when its API is called out of order)."""
        self.error_hints.append(explain)

    def error_hint(self, error: SubmissionError) -> T | None:
        for explain in self.error_hints:
            if (hint := explain(error)) is not None:
                return hint
        return None


__all__ = ["TOLERANCES", "CaseFailed", "CaseSkipped", "Ctx", "Event", "ReferenceFailed", "Suite",
           "as_reference", "case", "tolerances", "workload"]
