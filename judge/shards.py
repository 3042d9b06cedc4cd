"""Which files a package check judges, and a check split into shards across workers:
what the web (which imports no torch) and the worker (judge/check.py) agree on.

A fixture whose verdict holds only on a CUDA machine (say, too_slow because of a host sync
per micro-batch, which only a GPU shows) carries the line ``# judge-check: needs cuda`` among
its first five lines: it is judged where CUDA is available and listed as skipped elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge.package import Problem

NEEDS_CUDA = "# judge-check: needs cuda"


def needs_cuda(code: str) -> bool:
    """Whether a fixture's expected verdict holds only on a CUDA machine."""
    return any(line.strip() == NEEDS_CUDA for line in code.splitlines()[:5])


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


# What a file's judging is expected to cost in a check, in seconds, to order the files a
# validation's shards take (by_cost): a speed-checked file (the reference and the accepted
# fixtures, when the package has speed checks) about a second, a too_slow fixture twice that
# (its timed calls are the slow ones); a time_limit_exceeded fixture its case's wall limit,
# which it waits out; any other file a tenth. A wrong guess costs little: the shards take
# the files one at a time, so only the last few decide when they end together.
TIMED_S = 1.0
TOO_SLOW_S = 2.0
OTHER_S = 0.1


def speed_checked(problem: Problem, expected: str) -> bool:
    """Whether a file expected to get ``expected`` has its speed measured in a check."""
    return bool(problem.meta.throughput) and expected in ("accepted", "too_slow")


def file_cost(problem: Problem, expected: str) -> float:
    """The expected cost of judging one file of ``problem`` in a check (see TIMED_S)."""
    if expected == "time_limit_exceeded":
        return problem.meta.limits.case_wall_s
    if speed_checked(problem, expected):
        return TOO_SLOW_S if expected == "too_slow" else TIMED_S
    return OTHER_S


def by_cost(problem: Problem, files: list[tuple[str, str, str | None]]
            ) -> list[tuple[str, str, str | None]]:
    """``files`` (check_files' tuples) in the order a validation's shards take them: the
    reference first (nothing else counts until it is accepted), then the costliest first
    (:func:`file_cost`; ties in the check's order), so that the cheap files come last and
    fill in while the shards end together (greedy list scheduling)."""
    return sorted(files, key=lambda f: (f[0] != "reference", -file_cost(problem, f[1])))


def merge_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One validation result from its shards' (CheckResult.to_json() each): the files in
    the check's order, every error and warning once, and the reviews that need them all
    (a reference every accepted fixture fails; a reference that failed, after which the
    other shards' files are left out, as a single check would not have judged them)."""
    files = [f for part in parts for f in part.get("files", [])]
    order = {"reference": 0, "starter": 1}
    files.sort(key=lambda f: (order.get(f["label"], 2), f["label"]))
    errors = _once(e for part in parts for e in part.get("errors", []))
    judged = {f["label"] for f in files}  # a CUDA fixture a CPU shard skipped, a GPU one took
    result: dict[str, Any] = {"errors": errors, "files": files,
              "warnings": _once(w for part in parts for w in part.get("warnings", [])),
              "skipped": _once(s for part in parts for s in part.get("skipped", [])
                               if s not in judged),
              "seed": parts[0].get("seed") if parts else None}
    reference = next((f for f in files if f["label"] == "reference"), None)
    accepted = [f for f in files if f["expected"] == "accepted" and f["label"] != "reference"]
    if reference is not None and not reference["ok"]:
        result["files"] = [reference]
        if not any(e.startswith("the reference is not accepted") for e in errors):
            errors.append("the reference is not accepted, so no other file was judged "
                          "(each would fail the same way)")
    elif reference is not None and accepted and not any(f["ok"] for f in accepted):
        reference.update(ok=False, detail=f"reference: accepted only because every expected "
                         f"value comes from it: all {len(accepted)} accepted fixtures fail, "
                         f"so the reference (or the tests) may be wrong")
    kept = [reference] if reference is not None and not reference["ok"] else files
    result["ok"] = not errors and all(f["ok"] for f in kept)
    return result


def _once(items) -> list:
    return list(dict.fromkeys(items))
