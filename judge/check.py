"""``judge check``: a package proves its own tests.

A package passes when its schema loads, its tests import (public cases first, at least one
example), the reference is accepted, the starter is not, and every file under
``submissions/<verdict>/`` gets exactly that verdict.

A fixture whose verdict holds only on a CUDA machine (say, too_slow because of a host sync
per micro-batch, which only a GPU shows) carries the line ``# judge-check: needs cuda`` among
its first five lines: it is judged where CUDA is available and listed as skipped elsewhere.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import lint
from judge.calibration import CAUGHT_BY_HIDDEN, caught_by, speed_entries
from judge.events import CheckedFile
from judge.grader import Options, grade
from judge.package import Problem
from judge.quiet import measuring_now
from judge.report import Report
from judge.shards import NEEDS_CUDA, by_cost, check_files, needs_cuda, speed_checked
from judge.trust import runs_confined
from judge.verdict import Verdict
from sandbox.launch import Launcher

# check_files, needs_cuda and NEEDS_CUDA live in judge.shards (the web imports them without
# torch) and are part of this module's API too.
__all__ = ["NEEDS_CUDA", "CheckResult", "Outcome", "check_files", "check_problem", "needs_cuda",
           "review", "suite_errors"]


@dataclass
class Outcome:
    """One graded file of a package: what it should get and what it got."""

    label: str  # "reference", "starter", "submissions/wrong_answer/x.py"
    expected: str  # a verdict, or "not accepted"
    report: Report
    # Set when the file got its verdict but the check still doubts it (a reference that
    # every accepted fixture disagrees with): the explanation.
    doubt: str = ""

    @property
    def ok(self) -> bool:
        if self.doubt:
            return False
        got = self.report.verdict
        if self.expected == "not accepted":
            return got not in (Verdict.ACCEPTED, Verdict.INTERNAL_ERROR)
        return str(got) == self.expected

    def checked(self) -> CheckedFile:
        """What a validation report keeps of it (web/README.md, validate jobs)."""
        caught, public = caught_by(self.report)
        return CheckedFile(self.label, self.expected, self.report.verdict, self.ok,
                           "" if self.ok else self.explain(), caught, public,
                           speed_entries(self.report), self.report.time_ms)

    def to_json(self) -> dict[str, object]:
        return self.checked().to_json()

    def explain(self) -> str:
        r = self.report
        if self.doubt:
            return f"{self.label}: {self.doubt}"
        text = f"{self.label}: expected {self.expected}, got {r.verdict}"
        failing = [t for t in r.tests if t.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)]
        # Problem authors see the admin-only details (a reference's traceback) too. Cases
        # that failed alike are one line (a crashing file fails every case the same way).
        if r.message.en and (r.detail.en or not failing):
            text += "\n    " + (r.detail.en or r.message.en).replace("\n", "\n    ")
        groups: dict[tuple[str, str], list[str]] = {}
        for t in failing:
            groups.setdefault((str(t.verdict), t.detail.en or t.message.en), []).append(t.name)
        for (verdict, message), names in list(groups.items())[:3]:
            text += f"\n    {', '.join(names)} [{verdict}]: " + message.replace("\n", "\n      ")
        text += f"\n    (seed {r.seed})"
        # Every runner loads its file as submission.py: name the file the author wrote.
        return re.sub(r"\bsubmission\.py\b", self.file_name, text)

    @property
    def file_name(self) -> str:
        return {"reference": "reference.py", "starter": "starter.py"}.get(
            self.label, Path(self.label).name)


@dataclass
class CheckResult:
    problem: Problem
    errors: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # fixtures this machine cannot judge
    # what the judging showed beyond the verdicts (a wrong fixture only public cases catch)
    warnings: list[str] = field(default_factory=list)
    findings: list[lint.Finding] = field(default_factory=list)  # its lint findings
    seed: int | None = None  # the seed every file was judged with (None: each its own)
    time_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and all(o.ok for o in self.outcomes)

    def problems(self) -> list[str]:
        return self.errors + [o.explain() for o in self.outcomes if not o.ok]

    def files(self) -> list[CheckedFile]:
        return [o.checked() for o in self.outcomes]

    def to_json(self) -> dict[str, object]:
        """The validation result a worker sends (web/validation.py stores it)."""
        return {"ok": self.ok, "errors": self.errors, "warnings": self.warnings,
                "files": [o.to_json() for o in self.outcomes], "skipped": self.skipped,
                "seed": self.seed, "time_s": round(self.time_s, 1)}


def suite_errors(problem: Problem, *, confined: bool) -> list[str]:
    """What is wrong with the package's tests as a whole, from tests.py's syntax tree
    (judge.lint). A package whose code runs ``confined`` (judge.trust) is never imported
    here: its import happens in the grader box of each file judged, which reports what
    fails there; any other is imported too."""
    errors = [str(f).removeprefix("error: ") for f in lint.errors(lint.lint_tests(problem))]
    if not errors and not confined:
        try:
            problem.tests  # noqa: B018 (importing it is the check)
        except Exception as e:
            return [f"tests.py does not load: {type(e).__name__}: {e}"]
    return errors


def check_problem(problem: Problem, launcher: Launcher, *, seed: int | None = None,
                  workers: int = 2, throughput: bool = True, cuda: bool = False,
                  on_outcome: Callable[[Outcome], None] | None = None,
                  only: Callable[[str, str], bool] | None = None,
                  take: Callable[[str, str], bool] | None = None) -> CheckResult:
    """Judge the package's files (those ``only(label, expected)`` keeps, when given),
    ``workers`` at a time. The reference is judged first: when it is not accepted, nothing
    else is (every other verdict would be the same internal error).

    ``take``: this check is one shard of a validation split across workers, judged one file
    at a time whatever ``workers`` says. The files go in the order the shards take them
    (``judge.shards.by_cost``), and ``take(label, expected)`` is asked just before each one
    is judged: False, another shard judges it. While another worker of this machine measures
    speed (a shard on the same host), a file with a speed check would wait for it: the next
    file without one goes first."""
    started = time.monotonic()
    result = CheckResult(problem, seed=seed)
    found = result.findings = lint.lint_problem(problem)
    result.errors = suite_errors(problem, confined=runs_confined(problem, launcher.isolation))
    result.errors += [str(f).removeprefix("error: ") for f in lint.errors(found)
                      if not f.where.startswith("tests.py")]
    if result.errors:
        return result

    jobs = check_files(problem, cuda=cuda)
    result.skipped = [label for label, _, code in jobs if code is None]
    jobs = [job for job in jobs if job[2] is not None and (only is None or only(*job[:2]))]
    if take is not None:
        jobs = by_cost(problem, jobs)
    # A wrong file is known once a hidden case fails: the cases after it are not run.
    options = Options(seed=seed, throughput=throughput, cuda=cuda, stop_at_hidden_failure=True)

    def run(job: tuple[str, str, str | None]) -> Outcome | None:
        label, expected, code = job
        assert code is not None
        if take is not None and not take(label, expected):
            return None
        outcome = Outcome(label, expected, grade(problem, code, launcher, options))
        if on_outcome:
            on_outcome(outcome)
        return outcome

    if jobs and jobs[0][0] == "reference":
        first = run(jobs.pop(0))
        result.outcomes += [first] if first else []
        if first and not first.ok:
            result.errors.append("the reference is not accepted, so no other file was "
                                 "judged (each would fail the same way)")
            result.time_s = time.monotonic() - started
            return result
    if take is not None:
        timed = {label for label, expected, _ in jobs
                 if throughput and speed_checked(problem, expected)}
        result.outcomes += in_turn(jobs, run, lambda job: job[0] in timed, measuring_now)
    else:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            result.outcomes += [o for o in pool.map(run, jobs) if o is not None]
    review(result)
    result.time_s = time.monotonic() - started
    return result


def in_turn(jobs: list, run: Callable[[Any], Outcome | None], timed: Callable[[Any], bool],
            busy: Callable[[], bool]) -> list[Outcome]:
    """Run ``jobs`` one at a time in their order, except that while the machine is
    ``busy`` measuring (asked once per job) a ``timed`` job goes after the first that is
    not (when every one left is timed, the first goes)."""
    outcomes, left = [], list(jobs)
    while left:
        held = busy()
        job = next((j for j in left if not (held and timed(j))), left[0])
        left.remove(job)
        outcome = run(job)
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes


def review(result: CheckResult) -> None:
    """What the verdicts alone do not show: a reference that every accepted fixture
    disagrees with, and wrong_answer or runtime_error fixtures that no hidden case
    catches (a warning; ``check --strict`` fails on it)."""
    accepted = [o for o in result.outcomes if o.expected == "accepted" and o.label != "reference"]
    reference = next((o for o in result.outcomes if o.label == "reference"), None)
    if reference is not None and reference.ok and accepted and not any(o.ok for o in accepted):
        reference.doubt = (f"accepted only because every expected value comes from it: "
                           f"all {len(accepted)} accepted fixtures fail, so the reference "
                           f"(or the tests) may be wrong")
    for o in result.outcomes:
        if o.expected in CAUGHT_BY_HIDDEN and o.ok:
            name, public = caught_by(o.report)
            if public:
                result.warnings.append(f"{o.label}: only public case {name} catches it; a "
                                       f"hidden case should too")

