"""The practice pack: ``practice/judge.py`` with the public parts of the problems, as a zip.

What goes in: the CLI, the judge modules it imports (standard library and torch only), and
for each problem its ``problem.toml``, statements, starter, fixture, ``tests.py`` with the
hidden cases cut out, and ``expected.bin`` (the reference's answers to the public cases,
see :mod:`judge.expected`). What never goes in: ``reference.py``, the solution's
explanation (``solution.*.md``), hidden cases, ``submissions/``: only the files named in
``PUBLIC_FILES`` are copied.
"""

from __future__ import annotations

import contextlib
import io
import sys
import zipfile
from pathlib import Path
from types import ModuleType

from judge.case_reader import read_cases
from judge.expected import FILE as EXPECTED_FILE
from judge.expected import RecordingSession
from judge.grader import Options, Sessions, run_case
from judge.package import ROOT, Problem
from judge.testing import CASE_ATTR
from judge.trust import runs_confined
from judge.workdirs import job_root
from sandbox.launch import Launcher
from sandbox.protocol import Kind, encode

CORE_MODULES = [
    "judge/__init__.py", "judge/i18n.py", "judge/verdict.py", "judge/schema.py",
    "judge/case_reader.py", "judge/package.py", "judge/compare.py", "judge/testing.py",
    "judge/session.py", "judge/stream.py", "judge/calls.py", "judge/events.py",
    "judge/runner_errors.py",
    "judge/trust.py", "judge/quiet.py",
    "judge/grader.py", "judge/pipeline.py", "judge/sessions.py", "judge/workdirs.py",
    "judge/report.py",
    "judge/render.py", "judge/capabilities.py",
    "judge/expected.py", "judge/throughput.py", "judge/measurement.py",
    "judge/jobfiles.py", "judge/training.py",
    "sandbox/__init__.py", "sandbox/protocol.py", "sandbox/messages.py", "sandbox/dtypes.py",
    "sandbox/channel.py",
    "sandbox/runner.py", "sandbox/launch.py",
    "practice/__init__.py", "practice/judge.py", "practice/remote.py", "practice/README.md",
]
PUBLIC_FILES = ["problem.toml", "statement.zh.md", "statement.en.md", "starter.py",
                "fixture.py"]


def cut_hidden_cases(source: str) -> str:
    """tests.py with every hidden case removed (comments and helpers kept), read from its
    syntax tree: nothing of it runs."""
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for declared in read_cases(source):
        if not declared.public:
            drop.update(range(declared.first_line - 1, declared.last_line))
    kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    header = "# The public cases of this problem. The hidden cases are judged online only.\n"
    return header + kept


def public_tests_source(source: str, path: Path | None = None) -> str:
    """tests.py with every hidden case removed, and executed here to make sure none
    survived. ``path`` is where the original lives (a tests.py may read files beside it,
    such as fixture.py). Only for trusted packages: see :func:`public_parts`."""
    result = cut_hidden_cases(source)
    assert_only_public(result, path)
    return result


def assert_only_public(source: str, path: Path | None) -> None:
    """Execute the stripped source and make sure no hidden case survived (a case declared
    in a way the AST filter does not recognise must not slip into the pack)."""
    filename = str(path or "tests.py")
    # A real module in sys.modules while it runs, as when the practice CLI imports it:
    # dataclasses and typing look their module up there.
    module = ModuleType("judge_pack_check")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    for name, obj in vars(module).items():
        spec = getattr(obj, CASE_ATTR, None)
        if spec is not None and not spec["public"]:
            raise ValueError(f"tests.py: hidden case {name} could not be cut out of the pack")


def record_public(problem: Problem, launcher: Launcher, root: Path | None = None) -> bytes:
    """Run the public cases with the reference on both sides, recording the reference's
    answers; return them as expected.bin (see :mod:`judge.expected`). The job folders go
    in a fresh folder, or in ``root`` (a grader box's ``/jobs``)."""
    with contextlib.ExitStack() as stack:
        if root is None:
            root = stack.enter_context(job_root(launcher, prefix="judge-record-"))
        return _record(problem, launcher, root)
    raise AssertionError("unreachable")


def _record(problem: Problem, launcher: Launcher, root: Path) -> bytes:
    log: dict[str, list] = {}
    sessions = Sessions(launcher, problem, root, problem.read("reference.py"), "cpu")
    recorder = RecordingSession(sessions.get("ref"), log)
    sessions.current["ref"] = recorder
    try:
        for spec in problem.tests.select(public_only=True):
            recorder.case = spec.name
            result = run_case(problem, spec, sessions, 0, Options())
            if str(result.verdict) != "accepted":
                raise RuntimeError(f"{problem.slug}/{spec.name}: the reference got "
                                   f"{result.verdict}: {result.message.en}")
    finally:
        sessions.close()
    return encode(Kind.RESULT, log).tobytes()


def public_parts(problem: Problem, launcher: Launcher) -> tuple[str, bytes]:
    """A problem's tests.py cut to its public cases (checked by running it) and its
    expected.bin (the reference's answers to them). Both run the package's code: a package
    that did not ship with the judge runs it in a grader box (judge.trust)."""
    if runs_confined(problem, launcher.isolation):
        from judge.graderbox import record_in_box

        public = cut_hidden_cases(problem.read("tests.py"))
        return public, record_in_box(problem, launcher, public)
    public = public_tests_source(problem.read("tests.py"), problem.dir / "tests.py")
    return public, record_public(problem, launcher)


def zip_pack(parts: list[tuple[Problem, str, bytes]]) -> bytes:
    """The zip a learner downloads, from each problem's :func:`public_parts`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in CORE_MODULES:
            zf.write(ROOT / rel, f"torch-judge-practice/{rel}")
        zf.writestr("torch-judge-practice/practice/workspace/.keep", "")
        for problem, public, expected in parts:
            base = f"torch-judge-practice/problems/{problem.slug}"
            for name in PUBLIC_FILES:
                path = problem.dir / name
                if path.is_file():
                    zf.write(path, f"{base}/{name}")
            zf.writestr(f"{base}/tests.py", public)
            zf.writestr(f"{base}/{EXPECTED_FILE}", expected)
    return buf.getvalue()


def build_practice_pack(problems: list[Problem], launcher: Launcher) -> bytes:
    """The zip a learner downloads. ``launcher`` runs the reference to record answers."""
    return zip_pack([(p, *public_parts(p, launcher)) for p in problems])
