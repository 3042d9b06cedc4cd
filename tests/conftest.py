"""Shared fixtures: a plain launcher (the sandbox has its own suite), a quick one, and tiny
problems."""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.package import load_problem
from sandbox.launch import PlainLauncher

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """The web's commands reach ``python -m judge`` through an entry point, which exists
    only once this checkout is installed (``pip install -e``): say so rather than let the
    CLI tests fail with "invalid choice: 'serve'"."""
    from importlib import metadata

    if not metadata.entry_points(group="torch_judge.commands"):
        pytest.exit("this checkout is not installed in the environment (or is installed "
                    "from an older pyproject.toml): run scripts/setup.sh", returncode=4)


@pytest.fixture
def launcher():
    return PlainLauncher()


@pytest.fixture(scope="session")
def quick_launcher():
    """For tests of what a judging says rather than how its runners start (hints, the
    practice pack): this xdist worker's warm sandbox launcher where the machine has the
    sandbox (CI: each runner a fork of a template that imported torch once, a judging in
    about a tenth of a second), else the plain launcher (each runner imports torch, 2-3 s
    of CPU on a CI machine, twice a judging)."""
    from judge.isolation import sandbox_unavailable

    if sandbox_unavailable() is not None:
        yield PlainLauncher()
        return
    from tests.sandbox.helpers import make_launcher

    launcher = make_launcher()
    if launcher.template is not None:
        launcher.template.wait_ready()
    yield launcher
    launcher.close()


TOML = """
slug = "{slug}"
number = {number}
difficulty = "easy"
names = ["double"]
tags = ["test"]
[title]
zh = "加倍"
en = "Double"
[limits]
case_wall_s = {wall}
cpu_s = 20.0
memory_mb = {memory}
output_kb = 16
"""

REFERENCE = """
import torch

def double(x):
    return x * 2
"""

TESTS = '''
import torch
from judge.i18n import T
from judge.testing import case

@case(public=True, zh="样例", en="example")
def example_small(t):
    x = torch.tensor([1, 2, 3])
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")

@case(zh="随机", en="random")
def random_values(t):
    x = torch.randint(0, 100, (8,), generator=t.rng)
    print("hidden input", x.tolist())
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")

@case(zh="负数", en="negatives")
def negatives(t):
    x = -torch.randint(1, 100, (5,), generator=t.rng)
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")
'''


@contextlib.contextmanager
def double_it_sessions(launcher, tmp_path: Path, code: str) -> Iterator:
    """The grader's runner sessions (judge.grader.Sessions) for the tiny double-it problem
    and ``code``, under ``tmp_path``; closed after."""
    from judge.grader import Sessions

    problem = load_problem(write_problem(tmp_path / "problems"))
    root = tmp_path / "job"
    root.mkdir()
    sessions = Sessions(launcher, problem, root, code, "cpu")
    try:
        yield sessions
    finally:
        sessions.close()


def write_problem(root: Path, *, slug: str = "double-it", number: int = 7,
                  reference: str = REFERENCE, tests: str = TESTS, wall: float = 3.0,
                  memory: int = 2048, toml: str | None = None, fixture: str | None = None):
    folder = root / slug
    folder.mkdir(parents=True)
    (folder / "problem.toml").write_text(
        toml if toml is not None else TOML.format(slug=slug, number=number, wall=wall,
                                                  memory=memory))
    (folder / "statement.zh.md").write_text("# 加倍\n")
    (folder / "statement.en.md").write_text("# Double\n")
    (folder / "starter.py").write_text("def double(x):\n    raise NotImplementedError\n")
    (folder / "reference.py").write_text(textwrap.dedent(reference))
    (folder / "tests.py").write_text(textwrap.dedent(tests))
    if fixture is not None:
        (folder / "fixture.py").write_text(textwrap.dedent(fixture))
    return folder


@pytest.fixture
def make_problem(tmp_path):
    def make(**kwargs):
        return load_problem(write_problem(tmp_path / "problems", **kwargs))

    return make
