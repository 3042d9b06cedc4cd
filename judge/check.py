"""``judge check``: a package proves its own tests.

A package passes when its schema loads, its tests import (public cases first, at least one
example), the reference is accepted, the starter is not, and every file under
``submissions/<verdict>/`` gets exactly that verdict.

A fixture whose verdict holds only on a CUDA machine (say, too_slow because of a host sync
per micro-batch, which only a GPU shows) carries the line ``# judge-check: needs cuda`` among
its first five lines: it is judged where CUDA is available and listed as skipped elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from judge.case_reader import read_cases, read_workloads
from judge.grader import Options, grade
from judge.package import Problem
from judge.report import Report
from judge.trust import runs_confined
from judge.verdict import Verdict
from sandbox.launch import Launcher

NEEDS_CUDA = "# judge-check: needs cuda"


def needs_cuda(code: str) -> bool:
    """Whether a fixture's expected verdict holds only on a CUDA machine."""
    return any(line.strip() == NEEDS_CUDA for line in code.splitlines()[:5])


@dataclass
class Outcome:
    """One graded file of a package: what it should get and what it got."""

    label: str  # "reference", "starter", "submissions/wrong_answer/x.py"
    expected: str  # a verdict, or "not accepted"
    report: Report

    @property
    def ok(self) -> bool:
        got = self.report.verdict
        if self.expected == "not accepted":
            return got not in (Verdict.ACCEPTED, Verdict.INTERNAL_ERROR)
        return str(got) == self.expected

    def to_json(self) -> dict[str, object]:
        """What a validation report keeps of it (web/README.md, validate jobs)."""
        return {"label": self.label, "expected": self.expected,
                "verdict": str(self.report.verdict), "ok": self.ok,
                "detail": "" if self.ok else self.explain()}

    def explain(self) -> str:
        r = self.report
        text = f"{self.label}: expected {self.expected}, got {r.verdict}"
        failing = [t for t in r.tests if t.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)]
        # Problem authors see the admin-only details (a reference's traceback) too.
        if r.message.en:
            text += "\n    " + (r.detail.en or r.message.en).replace("\n", "\n    ")
        for t in failing[:3]:
            text += f"\n    {t.name} [{t.verdict}]: " + (t.detail.en or t.message.en).replace(
                "\n", "\n      ")
        text += f"\n    (seed {r.seed})"
        return text


@dataclass
class CheckResult:
    problem: Problem
    errors: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # fixtures this machine cannot judge

    @property
    def ok(self) -> bool:
        return not self.errors and all(o.ok for o in self.outcomes)

    def problems(self) -> list[str]:
        return self.errors + [o.explain() for o in self.outcomes if not o.ok]


def check_files(problem: Problem, *, cuda: bool = False) -> list[tuple[str, str, str | None]]:
    """(label, expected verdict, code) of every file a check judges, in order; the code
    is None for a fixture this machine cannot judge (it needs CUDA)."""
    files: list[tuple[str, str, str | None]] = [
        ("reference", "accepted", problem.read("reference.py")),
        ("starter", "not accepted", problem.starter),
    ]
    for verdict, path in problem.submissions():
        label = str(Path("submissions") / verdict / path.name)
        code = path.read_text(encoding="utf-8")
        files.append((label, verdict, None if needs_cuda(code) and not cuda else code))
    return files


def suite_errors(problem: Problem, *, confined: bool) -> list[str]:
    """What is wrong with the package's tests as a whole. A package whose code runs
    ``confined`` (judge.trust) is read from its syntax tree here, never imported: its
    import happens in the grader box of each file judged, which reports what fails there."""
    if confined:
        source = problem.read("tests.py")
        try:
            declared = read_cases(source)
            workloads = set(read_workloads(source))
        except SyntaxError as e:
            return [f"tests.py does not load: SyntaxError: {e}"]
        cases = [(c.name, c.public, c.is_example) for c in declared]
    else:
        try:
            suite = problem.tests
        except Exception as e:
            return [f"tests.py does not load: {type(e).__name__}: {e}"]
        cases = [(c.name, c.public, c.is_example) for c in suite.cases]
        workloads = set(suite.workloads)
    if not cases:
        return ["tests.py declares no @case"]
    errors = []
    first_hidden = next((i for i, (_, public, _) in enumerate(cases) if not public), None)
    if first_hidden is not None:
        late = [name for name, public, _ in cases[first_hidden:] if public]
        if late:
            errors.append(f"tests.py: public case {late[0]} comes after hidden case "
                          f"{cases[first_hidden][0]}; put public cases first")
    if not any(example for _, _, example in cases):
        errors.append("tests.py has no public example_* case")
    for tp in problem.meta.throughput:
        if tp.workload not in workloads:
            errors.append(f"throughput {tp.name!r}: tests.py has no @workload "
                          f"{tp.workload!r}")
    return errors


def check_problem(problem: Problem, launcher: Launcher, *, seed: int | None = None,
                  workers: int = 2, throughput: bool = True, cuda: bool = False,
                  on_outcome: Callable[[Outcome], None] | None = None) -> CheckResult:
    result = CheckResult(problem)
    result.errors = suite_errors(problem, confined=runs_confined(problem, launcher.isolation))
    if result.errors:
        return result

    jobs = check_files(problem, cuda=cuda)
    result.skipped = [label for label, _, code in jobs if code is None]
    jobs = [job for job in jobs if job[2] is not None]
    options = Options(seed=seed, throughput=throughput, cuda=cuda)

    def run(job: tuple[str, str, str | None]) -> Outcome:
        label, expected, code = job
        assert code is not None
        outcome = Outcome(label, expected, grade(problem, code, launcher, options))
        if on_outcome:
            on_outcome(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        result.outcomes = list(pool.map(run, jobs))
    return result
