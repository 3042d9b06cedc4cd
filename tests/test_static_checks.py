"""The linters the project is written to: ruff over every Python file we wrote (the
learners' fixture submissions excepted, pyproject.toml) and mypy over the three packages.
Both were clean when these tests were added; a finding fails the suite with its text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing():
    # practice/workspace holds a learner's own files: not ours to lint
    practice = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "practice").glob("*.py"))
    done = _run("ruff", "check", "--no-cache", "judge", "sandbox", "web", "bench", "tests",
                "problems", *practice)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing(tmp_path):
    done = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert done.returncode == 0, done.stdout + done.stderr
