"""Removing a judging's folders: any depth, no link followed, never an exception."""

from __future__ import annotations

import os
from pathlib import Path

from judge.grader import Options, grade
from judge.verdict import Verdict
from judge.workdirs import job_root, remove_tree


def _chain(top: Path, depth: int) -> Path:
    """A chain of ``depth`` folders under ``top``, made without long paths."""
    here = os.getcwd()
    os.chdir(top)
    try:
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        Path("leaf.txt").write_text("bottom")
        return Path(os.getcwd())
    finally:
        os.chdir(here)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path):
    top = tmp_path / "job"
    top.mkdir()
    _chain(top, 3000)
    (top / "file").write_text("x")
    assert remove_tree(top) == []
    assert not top.exists()


def test_links_are_removed_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    top = tmp_path / "job"
    top.mkdir()
    bottom = _chain(top, 20)
    (bottom / "to-victim").symlink_to(victim)
    (top / "to-file").symlink_to(victim / "keep.txt")
    assert remove_tree(top) == []
    assert not top.exists()
    assert (victim / "keep.txt").read_text() == "keep"


def test_a_link_in_place_of_the_folder_is_unlinked(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    (tmp_path / "job").symlink_to(victim)
    assert remove_tree(tmp_path / "job") == []
    assert (victim / "keep.txt").exists()
    assert remove_tree(tmp_path / "gone") == []


class Releasing:
    """A launcher that records which folders it was asked to release."""

    isolation = "test"

    def __init__(self) -> None:
        self.released: list[Path] = []

    def release(self, folder: Path) -> None:
        self.released.append(folder)
        raise RuntimeError("a launcher that fails to release is logged, not raised")


def test_job_root_releases_every_folder_whatever_happened(tmp_path):
    launcher = Releasing()
    try:
        with job_root(launcher, tmp_path) as root:  # type: ignore[arg-type]
            (root / "sub").mkdir()
            (root / "ref").mkdir()
            _chain(root / "sub", 1500)
            raise KeyError("the judging crashed")
    except KeyError:
        pass
    assert sorted(p.name for p in launcher.released) == ["ref", "sub"]
    assert list(tmp_path.iterdir()) == []


DEEP = """
import os

def double(x):
    os.mkdir("deep")
    os.chdir("deep")
    for _ in range(1500):
        os.mkdir("d")
        os.chdir("d")
    raise RuntimeError("left a deep tree")
"""


def test_a_submission_that_leaves_a_deep_tree_gets_its_verdict(make_problem, launcher,
                                                              tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    report = grade(make_problem(), DEEP, launcher, Options(throughput=False, jobs_root=jobs))
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message.en
    assert "left a deep tree" in report.message.en
    assert list(jobs.iterdir()) == []
