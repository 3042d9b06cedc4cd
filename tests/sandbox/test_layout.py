"""The sandbox's root names no host folder, and its interpreter still works as one:
``sys.executable`` starts (a DataLoader's spawned workers need it), with the host's own
libpython, and the launcher's layers go away with it."""

from __future__ import annotations

import sys

import pytest

from sandbox.layout import INSIDE_PYTHON, INSIDE_VENV, LAYERS
from tests.sandbox.helpers import ROOT, call, make_launcher

pytestmark = pytest.mark.sandbox

INTERPRETER = """
import multiprocessing
import subprocess
import sys


def square(x):
    return x * x


def f():
    child = subprocess.run([sys.executable, "-c", "import sys, torch; print(sys.version)"],
                           capture_output=True, text=True, timeout=120)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        spawned = pool.map(square, [3])
    return {"version": sys.version, "prefix": sys.prefix, "base": sys.base_prefix,
            "executable": sys.executable, "child": child.stdout.strip() or child.stderr,
            "spawned": spawned}
"""


def test_the_interpreter_is_at_neutral_paths_and_works(any_launcher, tmp_path):
    got = call(any_launcher, tmp_path, INTERPRETER)
    assert got["version"] == sys.version  # its own libpython, not the system's
    assert got["child"] == sys.version, got["child"]
    assert got["spawned"] == [9]
    if sys.prefix != sys.base_prefix:
        assert got["prefix"] == INSIDE_VENV
        assert got["executable"].startswith(f"{INSIDE_VENV}/bin/")
    if not sys.base_prefix.startswith("/usr"):
        assert got["base"] == INSIDE_PYTHON
    for host in (str(ROOT), sys.prefix, sys.base_prefix):
        assert host not in str(got)


def test_a_launcher_removes_its_layers_when_it_closes():
    launcher = make_launcher(warm=False)
    layers = launcher.layout.layers
    assert layers is not None and layers.root.is_dir()
    with open("/proc/self/mountinfo") as f:
        assert any(line.split()[4].startswith(str(layers.root)) for line in f)
    launcher.close()
    assert not layers.root.exists()
    with open("/proc/self/mountinfo") as f:
        assert not any(line.split()[4].startswith(str(layers.root)) for line in f)
    assert LAYERS.is_dir()
