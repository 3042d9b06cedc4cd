"""Data files the grader writes into job folders: never through a planted name, the same
name in every folder, removed afterwards, and a full folder is the submission's doing."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from judge.grader import Options, grade
from judge.jobfiles import JobFiles, JobFolderFull
from judge.verdict import Verdict
from tests.conftest import TOML


def folders(tmp_path: Path) -> dict[str, Path]:
    found = {}
    for role in ("sub", "ref"):
        found[role] = tmp_path / role
        found[role].mkdir(parents=True)
    return found


def test_one_name_in_every_folder_read_only_and_removed(tmp_path):
    where = folders(tmp_path)
    files = JobFiles(where, seed=7)
    name = files.put([b"a\n", b"b\n"], ".jsonl")
    assert name.endswith(".jsonl") and "/" not in name
    for folder in where.values():
        path = folder / name
        assert path.read_bytes() == b"a\nb\n"
        assert path.stat().st_mode & 0o777 == 0o444
    assert files.put(b"x") != name  # a second file of the same seed gets another name
    files.remove_all()
    assert all(list(folder.iterdir()) == [] for folder in where.values())


def test_the_name_comes_from_the_seed(tmp_path):
    a = JobFiles(folders(tmp_path / "a"), seed="case:1").put(b"x")
    b = JobFiles(folders(tmp_path / "b"), seed="case:1").put(b"y")
    c = JobFiles(folders(tmp_path / "c"), seed="case:2").put(b"x")
    assert a == b != c


def test_a_planted_link_is_never_written_through(tmp_path):
    where = folders(tmp_path / "jobs")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    first = JobFiles(folders(tmp_path / "probe"), seed=3).put(b"x")  # the name to expect
    os.symlink(victim, where["ref"] / first)  # planted in one folder only
    (where["sub"] / "other").write_text("the submission's own file")
    files = JobFiles(where, seed=3)
    name = files.put(b"data")
    assert name != first
    assert victim.read_text() == "keep me"
    assert (where["sub"] / name).read_bytes() == (where["ref"] / name).read_bytes() == b"data"
    assert not (where["sub"] / first).exists()  # the half-made attempt was taken back
    files.remove_all()
    assert os.path.islink(where["ref"] / first)  # what the submission made stays its own
    assert (where["sub"] / "other").exists()


def test_a_folder_replaced_by_a_link_is_not_followed(tmp_path):
    where = folders(tmp_path / "jobs")
    outside = tmp_path / "outside"
    outside.mkdir()
    where["sub"].rmdir()
    os.symlink(outside, where["sub"])
    with pytest.raises(JobFolderFull) as info:
        JobFiles(where, seed=1).put(b"data")
    assert "removed or replaced" in info.value.message.en
    assert list(outside.iterdir()) == []
    assert list(where["ref"].iterdir()) == []  # nothing left in the other folder either


def test_a_full_folder_of_the_submission_is_its_own_doing(tmp_path, monkeypatch):
    where = folders(tmp_path)
    real = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(where["sub"])):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(JobFolderFull) as info:
        JobFiles(where, seed=1).put(b"data")
    assert "full" in info.value.message.en
    monkeypatch.undo()
    assert list(where["sub"].iterdir()) == [] and list(where["ref"].iterdir()) == []


def test_the_references_folder_failing_is_the_judges_fault(tmp_path):
    where = folders(tmp_path)
    where["ref"].rmdir()
    with pytest.raises(FileNotFoundError):
        JobFiles(where, seed=1).put(b"data")


FILE_TESTS = '''
from judge.i18n import T
from judge.testing import case


@case(public=True, zh="样例", en="example")
def example_reads(t):
    with t.data_file(b"21\\n", suffix=".txt") as name:
        t.expect_equal(t.sub.read_double(name), t.ref.read_double(name), "read_double")
        assert (t.workdir("sub") / name).exists()
        kept["name"] = name
    assert not (t.workdir("sub") / kept["name"]).exists()


kept = {}
'''

READER = """
def read_double(path):
    with open(path) as f:
        return 2 * int(f.read())
"""


def test_cases_hand_runners_a_file_by_name(make_problem, launcher):
    toml = TOML.format(slug="read-it", number=8, wall=5.0, memory=2048).replace(
        'names = ["double"]', 'names = ["read_double"]')
    problem = make_problem(slug="read-it", reference=READER, tests=FILE_TESTS, toml=toml)
    report = grade(problem, READER, launcher, Options(seed=1))
    assert report.verdict is Verdict.ACCEPTED, report.message.en
    wrong = READER.replace("2 * int", "3 * int")
    assert grade(problem, wrong, launcher, Options(seed=1)).verdict is Verdict.WRONG_ANSWER


TIMED_TESTS = '''
from judge.testing import case, workload
from judge.throughput import Workload


@case(public=True, zh="样例", en="example")
def example_reads(t):
    with t.data_file(b"1\\n") as name:
        t.expect_equal(t.sub.read_double(name), 2, "read_double")


@workload
def timed(device):
    def make(rng, put):
        value = len(seen) + 1
        name = put(f"{value}\\n".encode(), ".txt")
        seen.append((name, value))
        return [name], {}

    def check(got, expected, folders):
        name, value = seen[-1]
        on_disk = [(folders[r] / name).read_text() for r in ("sub", "ref")]
        earlier = [n for n, _ in seen[:-1] if (folders["sub"] / n).exists()]
        return got == expected == 2 * value and on_disk == [f"{value}\\n"] * 2 and not earlier

    return Workload(fn="read_double", make=make, check=check, files=True, check_folders=True,
                    warmup=1, min_pairs=3, max_pairs=4)


seen = []
'''


def test_a_speed_check_gets_fresh_files_per_timed_call(make_problem, launcher):
    toml = TOML.format(slug="read-fast", number=9, wall=5.0, memory=2048).replace(
        'names = ["double"]', 'names = ["read_double"]') + (
        '[[throughput]]\nname = "timed"\nworkload = "timed"\ndevice = "cpu"\n'
        'min_ratio = 0.01\nbudget_s = 5.0\n')
    problem = make_problem(slug="read-fast", reference=READER, tests=TIMED_TESTS, toml=toml)
    report = grade(problem, READER, launcher, Options(seed=1))
    assert report.verdict is Verdict.ACCEPTED, (report.message.en, report.detail)
    assert report.throughput and report.throughput[0].pairs >= 3
