"""Uploaded packages: hostile archives are refused with a reason, good ones load."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest

from judge.package import PackageError
from judge.upload import UploadLimits, copy_folder, unpack_zip
from tests.conftest import write_problem


def zip_of(files: dict[str, bytes | str], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


@pytest.fixture
def package_files(tmp_path):
    folder = write_problem(tmp_path / "src")
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_good_zip_loads_with_or_without_a_top_folder(package_files, tmp_path):
    p = unpack_zip(zip_of(package_files), tmp_path / "a")
    assert p.slug == "double-it"
    nested = {f"double-it/{k}": v for k, v in package_files.items()}
    nested["double-it/__pycache__/x.pyc"] = b"junk"  # ignored
    p = unpack_zip(zip_of(nested), tmp_path / "b")
    assert p.slug == "double-it" and not (tmp_path / "b" / "__pycache__").exists()


@pytest.mark.parametrize("name, message", [
    ("../evil.py", "'..' and '.' are not allowed"),
    ("a/../../evil.py", "'..' and '.' are not allowed"),
    ("/etc/cron.d/evil", "absolute paths are not allowed"),
    ("C:/evil.py", "absolute paths are not allowed"),
    ("a\\..\\evil.py", "backslashes"),
])
def test_paths_that_escape_are_refused(package_files, tmp_path, name, message):
    with pytest.raises(PackageError, match=message):
        unpack_zip(zip_of({**package_files, name: "x"}), tmp_path / "x")
    assert not (tmp_path / "evil.py").exists()


def test_symlinks_are_refused(package_files, tmp_path):
    with pytest.raises(PackageError, match="symbolic links are not allowed"):
        unpack_zip(zip_of(package_files, symlink="reference.py.link"), tmp_path / "x")


def test_size_and_count_caps_hold_whatever_the_archive_claims(package_files, tmp_path):
    small = UploadLimits(archive_bytes=10**6, files=10, file_bytes=1000, total_bytes=5000)
    bomb = zip_of({**package_files, "data.txt": b"0" * 10**6})  # compresses to ~1 KB
    with pytest.raises(PackageError, match="larger than 1000 bytes"):
        unpack_zip(bomb, tmp_path / "x", small)
    many = {**package_files, **{f"f{i}.txt": "x" for i in range(20)}}
    with pytest.raises(PackageError, match="the limit is 10"):
        unpack_zip(zip_of(many), tmp_path / "y", small)
    with pytest.raises(PackageError, match="the limit is 100"):
        unpack_zip(zip_of(package_files), tmp_path / "z", UploadLimits(archive_bytes=100))


def test_not_a_zip_empty_zip_and_broken_schema(package_files, tmp_path):
    with pytest.raises(PackageError, match="not a zip archive"):
        unpack_zip(b"PK-not-really", tmp_path / "a")
    with pytest.raises(PackageError, match="holds no files"):
        unpack_zip(zip_of({}), tmp_path / "b")
    broken = {**package_files, "problem.toml": b"slug = 'x'\nlimts = 1\n"}
    with pytest.raises(PackageError, match="unknown key 'limts'"):
        unpack_zip(zip_of(broken), tmp_path / "c")


def test_copy_folder_refuses_symlinks(tmp_path):
    folder = write_problem(tmp_path / "src")
    assert copy_folder(folder, tmp_path / "ok").slug == "double-it"
    (folder / "link.py").symlink_to("/etc/passwd")
    with pytest.raises(PackageError, match="symbolic links are not allowed"):
        copy_folder(folder, tmp_path / "bad")
