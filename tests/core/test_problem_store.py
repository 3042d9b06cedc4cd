"""judge.problem_store: one store of package versions by content hash, with the same checks
for an upload, a folder and a worker's download."""

from __future__ import annotations

import io
import zipfile

import pytest

from judge.package import PackageError, package_hash
from judge.problem_store import Problems, Store
from tests.conftest import write_problem


def zipped(folder) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, str(path.relative_to(folder)))
    return buffer.getvalue()


def test_a_download_is_stored_under_its_hash_with_the_uploads_checks(tmp_path):
    folder = write_problem(tmp_path / "src")
    version = package_hash(folder)
    problems = Problems(None, store=tmp_path / "cache", fetch=lambda v: zipped(folder))
    got = problems.exact(version)
    assert got is not None and got.content_hash == version
    assert (tmp_path / "cache" / version).is_dir()
    assert problems.get("double-it", version) is got


def test_a_download_whose_content_is_another_version_is_refused_and_not_kept(tmp_path):
    folder = write_problem(tmp_path / "src")
    problems = Problems(None, store=tmp_path / "cache", fetch=lambda v: zipped(folder))
    with pytest.raises(PackageError, match="has content"):
        problems.exact("0" * 64)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []


def test_a_download_the_web_could_not_read_is_refused_like_an_upload(tmp_path):
    folder = write_problem(tmp_path / "src")
    (folder / "statement.en.md").write_bytes(b"\xff\xfe not utf-8")
    version = package_hash(folder)
    problems = Problems(None, store=tmp_path / "cache", fetch=lambda v: zipped(folder))
    with pytest.raises(PackageError, match=r"statement\.en\.md is not UTF-8"):
        problems.exact(version)
    assert not (tmp_path / "cache" / version).exists()


def test_a_tests_file_that_does_not_parse_is_refused(tmp_path):
    folder = write_problem(tmp_path / "src")
    (folder / "tests.py").write_text("def broken(:\n")
    with pytest.raises(PackageError, match=r"tests\.py has a syntax error on line 1"):
        Store(tmp_path / "bank").put(folder=folder)
    assert [p.name for p in (tmp_path / "bank").iterdir()] == []
