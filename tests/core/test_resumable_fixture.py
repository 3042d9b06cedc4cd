"""resumable-training's fixture: its hooks tell the judge about every change to the watched
checkpoint folder (and about nothing outside it), and it exposes no unhooked torch.save.

The fixture replaces torch.save and os.replace and adds an audit hook for good when it is
imported, so each test runs it in a child process and reads back what it asked."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "problems" / "resumable-training" / "fixture.py"

PRELUDE = """
import importlib.util, json, os, shutil, sys, tempfile
import torch
original_save = torch.save
spec = importlib.util.spec_from_file_location("judge_fixture", {fixture!r})
fx = importlib.util.module_from_spec(spec)
sys.modules["judge_fixture"] = fx
spec.loader.exec_module(fx)

asked = []

class Ctx:
    def ask(self, data):
        asked.append(data)

root = tempfile.mkdtemp(dir={tmp!r})
ckpt = os.path.join(root, "ckpt")
outside = os.path.join(root, "outside")
os.mkdir(ckpt)
os.mkdir(outside)
fx._watch = fx.Watch(Ctx(), ckpt, 0.5)
"""


def run(tmp_path: Path, body: str) -> list[dict]:
    code = PRELUDE.format(fixture=str(FIXTURE), tmp=str(tmp_path)) + textwrap.dedent(body) + (
        "\nfx._watch = None\nprint(json.dumps(asked))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def events(asked: list[dict]) -> list[str]:
    return [a["event"] for a in asked]


@pytest.mark.slow
def test_removes_and_renames_in_the_folder_are_asked_about(tmp_path):
    asked = run(tmp_path, """
        for name in ("a", "b", "c"):
            open(os.path.join(ckpt, name), "wb").close()
        asked.clear()
        os.remove(os.path.join(ckpt, "a"))          # dir_fd is -1 here: no directory fd
        os.rename(os.path.join(ckpt, "b"), os.path.join(ckpt, "b2"))
        os.replace(os.path.join(ckpt, "c"), os.path.join(ckpt, "c2"))
        os.mkdir(os.path.join(ckpt, "sub"))
        open(os.path.join(ckpt, "sub", "x"), "wb").close()
        asked.clear()
        shutil.rmtree(os.path.join(ckpt, "sub"))     # os.remove/os.rmdir with real dir fds
    """)
    kinds = events(asked)
    assert kinds[0] == "rmtree"
    assert "remove" in kinds and "rmdir" in kinds


@pytest.mark.slow
def test_each_change_is_asked_before_it_happens(tmp_path):
    asked = run(tmp_path, """
        for name in ("a", "b", "c"):
            open(os.path.join(ckpt, name), "wb").close()
        asked.clear()
        os.remove(os.path.join(ckpt, "a"))
        os.rename(os.path.join(ckpt, "b"), os.path.join(ckpt, "b2"))
        os.replace(os.path.join(ckpt, "c"), os.path.join(ckpt, "c2"))
        os.truncate(os.path.join(ckpt, "c2"), 0)
    """)
    assert events(asked) == ["remove", "rename", "commit", "rename", "commit", "truncate"]


@pytest.mark.slow
def test_changes_outside_the_folder_are_not_asked_about(tmp_path):
    asked = run(tmp_path, """
        open(os.path.join(outside, "a"), "wb").close()
        os.replace(os.path.join(outside, "a"), os.path.join(outside, "b"))
        os.remove(os.path.join(outside, "b"))
        os.mkdir(os.path.join(outside, "sub"))
        shutil.rmtree(os.path.join(outside, "sub"))
    """)
    assert asked == []


@pytest.mark.slow
def test_a_change_through_a_directory_fd_is_resolved(tmp_path):
    asked = run(tmp_path, """
        open(os.path.join(ckpt, "a"), "wb").close()
        open(os.path.join(outside, "a"), "wb").close()
        asked.clear()
        fd = os.open(outside, os.O_RDONLY)
        os.remove("a", dir_fd=fd)                    # outside: nothing to ask
        os.close(fd)
        fd = os.open(ckpt, os.O_RDONLY)
        os.remove("a", dir_fd=fd)
        os.close(fd)
    """)
    assert events(asked) == ["remove"]


@pytest.mark.slow
def test_a_save_into_the_folder_pauses_halfway(tmp_path):
    asked = run(tmp_path, """
        torch.save({"x": torch.zeros(1000)}, os.path.join(ckpt, "c.pt"))
        with open(os.path.join(ckpt, "d.pt"), "wb") as f:
            torch.save({"x": torch.zeros(1000)}, f)
        fd, tmp = tempfile.mkstemp(dir=ckpt)
        with os.fdopen(fd, "wb") as f:
            torch.save({"x": torch.zeros(1000)}, f)
        torch.save({"x": torch.zeros(1000)}, os.path.join(outside, "e.pt"))
        assert torch.load(os.path.join(ckpt, "c.pt"))["x"].shape == (1000,)
    """)
    saves = [a["event"] for a in asked if a["event"].startswith("save")]
    assert saves == ["save_mid", "save_done"] * 3


@pytest.mark.slow
def test_the_module_holds_no_unhooked_save(tmp_path):
    asked = run(tmp_path, """
        assert torch.save is not original_save
        assert torch.serialization.save is torch.save
        leaked = [name for name, value in vars(fx).items() if value is original_save]
        assert not leaked, leaked
    """)
    assert asked == []


def test_checkpoint_folder_names_are_unpredictable_and_never_taken(tmp_path, monkeypatch):
    """A submission that fills its folder with names (ckpt-0, ckpt-1, ... or anything) makes
    the judge choose another name, never crash on its own mkdir."""
    from judge.package import load_problem

    tests = load_problem(ROOT / "problems" / "resumable-training").load_tests_module()

    class Case:
        def workdir(self, role="sub"):
            return tmp_path

    assert tests.folder_name() != tests.folder_name()
    planted = ["ckpt-planted-dir", "ckpt-planted-file", "ckpt-planted-link"]
    (tmp_path / planted[0]).mkdir()
    (tmp_path / planted[1]).write_text("x")
    (tmp_path / planted[2]).symlink_to("/")
    names = iter([*planted, "ckpt-free"])
    monkeypatch.setattr(tests, "folder_name", lambda: next(names))
    host, name = tests.new_folder(Case(), "sub")
    assert (host, name) == (tmp_path / "ckpt-free", "ckpt-free")
    assert not host.exists()  # the fixture makes it, as it makes the timed runs' folders
