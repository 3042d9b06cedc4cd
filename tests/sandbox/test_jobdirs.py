"""Job folders: shared with the host, kept across runners of one job, size-limited, and
never a way for the sandbox to make the host follow a link."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from sandbox.launch import Limits
from tests.sandbox.helpers import job_folder, job_mounts, session

pytestmark = pytest.mark.sandbox

WRITER = """
import os
def write(name, text):
    with open(name, 'w') as fh:
        fh.write(text)
    return sorted(os.listdir('.'))
def read(name):
    return open(name).read()
def plant():
    os.symlink('/etc', 'etc_link')
    os.symlink('{victim}', 'victim_link')
    os.symlink('/', 'root_link')
    os.mkdir('sub')
    os.symlink('{victim}', 'sub/deep_link')
    os.unlink('submission.py')
    os.symlink('{victim}', 'submission.py')
    return sorted(os.listdir('.'))
"""


def test_files_persist_across_runners_and_both_paths(warm_launcher, cold_launcher, tmp_path):
    folder = job_folder(tmp_path, WRITER)
    with session(warm_launcher, folder, names=("write",)) as s:
        assert "ckpt" in s.call("sub", "write", ["ckpt", "step 1"], {}).value
    # The grader sees it from the host ...
    assert (folder / "ckpt").read_text() == "step 1"
    st = os.lstat(folder / "ckpt")
    assert st.st_uid == warm_launcher.uid
    # ... and the next runner of the job, warm or cold, too.
    with session(warm_launcher, folder, names=("read",)) as s:
        assert s.call("sub", "read", ["ckpt"], {}).value == "step 1"
    with session(cold_launcher, folder, names=("read",)) as s:
        assert s.call("sub", "read", ["ckpt"], {}).value == "step 1"


def test_a_job_folder_is_a_size_limited_tmpfs(warm_launcher, tmp_path):
    folder = job_folder(tmp_path, WRITER)
    with session(warm_launcher, folder, Limits(job_mb=8), names=("write",)):
        assert str(folder) in job_mounts()
        assert os.statvfs(folder).f_blocks * os.statvfs(folder).f_frsize <= 8 * 1024 * 1024


def test_planted_links_are_never_followed_by_the_host(warm_launcher, tmp_path):
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    victim = victim_dir / "precious.txt"
    victim.write_text("keep me")
    folder = job_folder(tmp_path, WRITER.replace("{victim}", str(victim)))
    with session(warm_launcher, folder, names=("plant",)) as s:
        listed = s.call("sub", "plant", [], {}).value
    assert "root_link" in listed
    # What the grader does: lstat/scandir without following, then rmtree.
    for entry in os.scandir(folder):
        assert not entry.is_dir(follow_symlinks=False) or entry.name == "sub"
    assert os.path.islink(folder / "submission.py")
    shutil.rmtree(folder.parent, ignore_errors=True)
    assert victim.read_text() == "keep me" and victim_dir.is_dir()
    assert os.path.isdir("/etc") and os.listdir("/etc")


def test_folders_are_released_once_the_grader_removed_them(warm_launcher, tmp_path):
    folder = job_folder(tmp_path, WRITER)
    with session(warm_launcher, folder, names=("write",)) as s:
        s.call("sub", "write", ["x", "y"], {})
    assert str(folder) in job_mounts()
    shutil.rmtree(folder.parent, ignore_errors=True)  # what grade() does at its end
    assert warm_launcher.jobdirs is not None
    warm_launcher.jobdirs.collect()
    assert str(folder) not in job_mounts()
    assert not folder.parent.exists()


def test_a_folder_in_use_is_not_released(warm_launcher, tmp_path):
    folder = job_folder(tmp_path, WRITER)
    with session(warm_launcher, folder, names=("write", "read")) as s:
        for name in os.listdir(folder):
            os.unlink(folder / name)  # empty, but a runner is alive
        assert warm_launcher.jobdirs is not None
        warm_launcher.jobdirs.collect()
        assert str(folder) in job_mounts()
        s.call("sub", "write", ["again", "z"], {})
    assert (folder / "again").read_text() == "z"


def test_closing_the_launcher_unmounts_everything(tmp_path):
    from tests.sandbox.helpers import make_launcher

    launcher = make_launcher(warm=False)
    folder = job_folder(tmp_path, WRITER)
    with session(launcher, folder, names=("write",)) as s:
        s.call("sub", "write", ["x", "y"], {})
    store = launcher.jobdirs.store if launcher.jobdirs else None
    launcher.close()
    time.sleep(0.1)
    assert str(folder) not in job_mounts()
    assert store is not None and not store.exists()


def test_folders_the_grader_makes_are_writable_by_the_sandbox(warm_launcher, tmp_path):
    """The grader (root, umask 022) makes a folder for checkpoints; the submission writes in
    it (resumable-training does this)."""
    folder = job_folder(tmp_path, WRITER)
    with session(warm_launcher, folder, names=("write",)) as s:
        (folder / "ckpt-1").mkdir()
        (folder / "ckpt-1" / "given.txt").write_text("from the grader")
        listed = s.call("sub", "write", ["ckpt-1/mine", "from the sandbox"], {}).value
        assert "ckpt-1" in listed
    assert (folder / "ckpt-1" / "mine").read_text() == "from the sandbox"
