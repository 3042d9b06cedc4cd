"""Problem packages: ``problem.toml`` parsed into typed frozen models, and the files beside it.

A package is a folder (see ``problems/_template/`` for every field, commented)::

    problem.toml  statement.zh.md  statement.en.md  starter.py  reference.py  tests.py
    fixture.py (scenario problems)  submissions/<expected_verdict>/*.py
    solution.zh.md  solution.en.md (optional, both or neither: the reference explained,
                                    shown on the site only to those who solved it)

Loading checks the schema and that the files exist; ``python -m judge check`` then proves
that the tests accept the reference, reject the starter and give every fixture in
``submissions/`` its folder's verdict.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Literal

from judge.case_reader import CaseDeclaration, declares_cuda, read_cases
from judge.i18n import T
from judge.measurement import budget
from judge.schema import SchemaError, parse
from judge.verdict import FIXTURE_VERDICTS
from sandbox.launch import Limits as RunnerLimits

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "problems"
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}[a-z0-9]$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
REQUIRED_FILES = ("problem.toml", "statement.zh.md", "statement.en.md", "starter.py",
                  "tests.py")
# A full package has the reference; a practice pack's public copy has expected.bin instead.
REFERENCE_OR_RECORDING = ("reference.py", "expected.bin")
# Optional; a package has both or neither. Like reference.py, never in a practice pack.
SOLUTION_FILES = ("solution.zh.md", "solution.en.md")
HASHED_SUFFIXES = {".toml", ".md", ".py", ".txt", ".json"}


class PackageError(ValueError):
    """A problem package that cannot be used; the message says what to fix."""


# ---------------------------------------------------------------- problem.toml


@dataclass(frozen=True)
class Title:
    zh: str
    en: str


@dataclass(frozen=True)
class Requires:
    torch: str = ">=2.2"  # informational: the torch the tests were written for
    numpy: bool = False  # the fixture or tests need numpy inside the sandbox
    cuda: bool = False  # every case needs a CUDA device


@dataclass(frozen=True)
class Limits:
    case_wall_s: float = 10.0  # wall clock for one test case, measured by the grader
    cpu_s: float = 60.0  # CPU seconds for one runner process (RLIMIT_CPU)
    memory_mb: int = 2048  # address space (CPU jobs) or cgroup memory (CUDA jobs)
    output_kb: int = 64  # stdout + stderr of one runner process


@dataclass(frozen=True)
class Throughput:
    name: str  # shown in reports
    workload: str  # a @workload function in tests.py
    device: Literal["cpu", "cuda"] = "cpu"
    min_ratio: float = 0.5  # submission speed / reference speed must reach this
    budget_s: float = 20.0  # time the measurement may take
    title: Title | None = None


@dataclass(frozen=True)
class ProblemMeta:
    slug: str
    number: int
    title: Title
    difficulty: Literal["easy", "medium", "hard"]
    names: tuple[str, ...]  # what a submission must define
    tags: tuple[str, ...] = ()
    version: str = "1"
    requires: Requires = field(default_factory=Requires)
    limits: Limits = field(default_factory=Limits)
    throughput: tuple[Throughput, ...] = ()


DIFFICULTY = {"easy": T("简单", "Easy"), "medium": T("中等", "Medium"), "hard": T("困难", "Hard")}


def parse_meta(text: str, where: str = "problem.toml") -> ProblemMeta:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PackageError(f"{where}: not valid TOML: {e}") from None
    try:
        meta = parse(ProblemMeta, data, "")
    except SchemaError as e:
        raise PackageError(f"{where}: {e}") from None
    errors = []
    if not SLUG.match(meta.slug):
        errors.append(f"slug {meta.slug!r} must be 3-64 characters of a-z, 0-9 and '-'")
    if meta.number < 1:
        errors.append("number must be 1 or more")
    if not meta.names or not all(IDENT.match(n) for n in meta.names):
        errors.append("names must list the Python names a submission defines")
    if not (meta.title.zh.strip() and meta.title.en.strip()):
        errors.append("title needs both zh and en")
    seen = set()
    for tp in meta.throughput:
        if not 0 < tp.min_ratio <= 1.5:
            errors.append(f"throughput {tp.name!r}: min_ratio must be in (0, 1.5]")
        if tp.budget_s <= 0:
            errors.append(f"throughput {tp.name!r}: budget_s must be positive")
        if tp.name in seen:
            errors.append(f"throughput {tp.name!r} is declared twice")
        seen.add(tp.name)
    lim = meta.limits
    if lim.case_wall_s <= 0 or lim.cpu_s <= 0 or lim.memory_mb < 256 or lim.output_kb < 1:
        errors.append("limits must be positive (memory_mb at least 256)")
    if errors:
        raise PackageError(f"{where}: " + "; ".join(errors))
    return meta


# ---------------------------------------------------------------- the package


@dataclass(frozen=True)
class Problem:
    """A loaded, schema-checked package. Tests are imported only when asked for."""

    dir: Path
    meta: ProblemMeta

    @property
    def slug(self) -> str:
        return self.meta.slug

    @property
    def number(self) -> int:
        return self.meta.number

    def read(self, name: str) -> str:
        return (self.dir / name).read_text(encoding="utf-8")

    def statement(self, lang: str) -> str:
        return self.read(f"statement.{'en' if lang == 'en' else 'zh'}.md")

    @property
    def starter(self) -> str:
        return self.read("starter.py")

    @property
    def has_solution(self) -> bool:
        return (self.dir / SOLUTION_FILES[0]).is_file()

    def solution(self, lang: str) -> str | None:
        """The explanation of the reference (Markdown), or None when the package has none."""
        if not self.has_solution:
            return None
        return self.read(f"solution.{'en' if lang == 'en' else 'zh'}.md")

    @property
    def fixture_path(self) -> Path | None:
        path = self.dir / "fixture.py"
        return path if path.is_file() else None

    @cached_property
    def content_hash(self) -> str:
        return package_hash(self.dir)

    def submissions(self) -> list[tuple[str, Path]]:
        """(expected verdict, file) for every fixture under submissions/."""
        root = self.dir / "submissions"
        found = []
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if folder.is_dir():
                    found += [(folder.name, f) for f in sorted(folder.glob("*.py"))]
        return found

    @cached_property
    def uses_cuda(self) -> bool:
        """Some case or speed check runs on CUDA (tests.py is read, not run): GPU workers
        take it first, and there its runners get the GPU."""
        return (any(tp.device == "cuda" for tp in self.meta.throughput)
                or declares_cuda(self.read("tests.py")))

    @cached_property
    def declared_cases(self) -> list[CaseDeclaration]:
        """The cases tests.py declares, read from its syntax tree without running it
        (empty when it does not parse: importing it then says why)."""
        try:
            return read_cases(self.read("tests.py"))
        except SyntaxError:
            return []

    @cached_property
    def tests(self):  # -> judge.testing.Suite (imported lazily: it needs torch)
        from judge.testing import collect

        return collect(self)

    def load_tests_module(self) -> ModuleType:
        """Import tests.py into this process under a name unique to this version of the
        package, so two versions never share a module. The grader does so for a bundled
        package only; any other is imported in its grader box (judge.trust)."""
        name = f"judge_problem_{self.slug.replace('-', '_')}_{self.content_hash[:12]}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, self.dir / "tests.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module


def package_hash(folder: Path) -> str:
    """sha256 over the package's text files (paths and contents), in a stable order."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if "__pycache__" in rel.parts or not path.is_file() or path.is_symlink():
            continue
        h.update(str(rel).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def load_problem(folder: Path, *, named_by_slug: bool = True) -> Problem:
    """Load and schema-check one package folder. Raises PackageError. A bank's folders
    are named after their slug; a stored version or an upload need not be."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PackageError(f"{folder}: not a folder")
    missing = [n for n in REQUIRED_FILES if not (folder / n).is_file()]
    if not any((folder / n).is_file() for n in REFERENCE_OR_RECORDING):
        missing.append("reference.py")
    solutions = [n for n in SOLUTION_FILES if (folder / n).is_file()]
    if len(solutions) == 1:
        other = next(n for n in SOLUTION_FILES if n not in solutions)
        missing.append(f"{other} (a solution is written in both languages, "
                       f"like the statement)")
    if missing:
        raise PackageError(f"{folder.name}: missing {', '.join(missing)}")
    meta = parse_meta((folder / "problem.toml").read_text(encoding="utf-8"),
                      f"{folder.name}/problem.toml")
    if named_by_slug and folder.name != meta.slug and not folder.name.startswith("_"):
        raise PackageError(f"{folder.name}: the folder must be named after its slug "
                           f"{meta.slug!r}")
    subs = folder / "submissions"
    if subs.is_dir():
        bad = [p.name for p in subs.iterdir() if p.is_dir() and p.name not in FIXTURE_VERDICTS]
        if bad:
            raise PackageError(f"{folder.name}/submissions: {bad[0]!r} is not a verdict "
                               f"(use one of {', '.join(sorted(FIXTURE_VERDICTS))})")
    return Problem(folder.resolve(), meta)


def problems_dir() -> Path:
    return Path(os.environ.get("JUDGE_PROBLEMS_DIR") or BUNDLED)


def load_all(root: Path | None = None) -> list[Problem]:
    """Every package under ``root`` (folders starting with '_' or '.' are skipped), by
    number. Raises PackageError on a broken package or a duplicate slug or number."""
    root = root or problems_dir()
    problems = [load_problem(p) for p in sorted(root.iterdir())
                if p.is_dir() and not p.name.startswith(("_", "."))]
    for attr in ("slug", "number"):
        seen: dict[object, str] = {}
        for p in problems:
            key = getattr(p, attr)
            if key in seen:
                raise PackageError(f"{p.dir.name} and {seen[key]} share the {attr} {key!r}")
            seen[key] = p.dir.name
    return sorted(problems, key=lambda p: p.number)


def find(problems: list[Problem], ident: str | int) -> Problem:
    """A problem by number or slug; PackageError naming the choices otherwise."""
    text = str(ident).strip()
    for p in problems:
        if text == p.slug or (text.isdigit() and int(text) == p.number):
            return p
    raise UnknownProblem(text, ", ".join(f"{p.number} {p.slug}" for p in problems))


class UnknownProblem(PackageError):
    """No problem has that number or slug; ``text`` says so in both languages."""

    def __init__(self, ident: str, choices: str) -> None:
        super().__init__(f"no problem {ident!r} (there are: {choices})")
        self.text = T(f"没有题目 {ident!r}（现有：{choices}）", str(self))


def speed_checks_s(problem: Problem) -> float:
    """The most one measurement of each of ``problem``'s speed checks may take (in ranking
    mode, the longer budget)."""
    return sum(budget(tp.budget_s, "ranking") for tp in problem.meta.throughput)


def limits_for(problem: Problem) -> RunnerLimits:
    """What each runner of ``problem`` may use (its package's limits, and a lifetime for
    the whole job a runner may serve)."""
    lim = problem.meta.limits
    # The watchdog is a safety net over the whole job a runner may serve: every case at its
    # wall clock, every throughput check twice (a borderline ratio is measured again), in
    # ranking mode's longer budget (runners that are not renewed serve all of it).
    # The cases are counted from tests.py's syntax tree: this runs in the worker, which
    # imports no package's code that did not ship with the judge (judge.trust).
    job_s = (lim.case_wall_s * (len(problem.declared_cases) + 1)
             + 2 * speed_checks_s(problem))
    return RunnerLimits(cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
                        output_bytes=lim.output_kb * 1024,
                        lifetime_s=max(120.0, job_s + 60))
