"""Taking in a problem package from outside (an admin's zip or folder), safely.

An uploaded package is data until it has been validated: it is unpacked file by file with
every path checked (no absolute paths, no ``..``, no symlinks or special files, no
duplicates), within caps on the archive size, the number of files, each file's size and the
total unpacked size (a zip bomb stops at the cap, whatever the archive claims). Then the
schema is checked by :func:`judge.package.load_problem`. Every refusal is a PackageError
that says what was wrong (a :class:`PackageRefused`, in both languages, for the checks made
here).
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path, PurePosixPath

from judge.i18n import T
from judge.package import PackageError, Problem, load_problem


@dataclass(frozen=True)
class UploadLimits:
    archive_bytes: int = 20 * 1024 * 1024
    files: int = 400
    file_bytes: int = 4 * 1024 * 1024
    total_bytes: int = 40 * 1024 * 1024


class PackageRefused(PackageError):
    """A refusal whose reason comes in both languages (``str()`` is the English one)."""

    def __init__(self, text: T) -> None:
        super().__init__(text.en)
        self.text = text


LIMITS = UploadLimits()
SKIPPED = ("__pycache__", ".DS_Store", "__MACOSX")


def _safe_parts(name: str) -> tuple[str, ...]:
    """The path's parts, or PackageError if the name could escape or confuse."""
    if "\\" in name or "\0" in name:
        raise PackageRefused(T(f"{name!r}：路径里不能有反斜杠或 NUL",
                               f"{name!r}: backslashes and NUL are not allowed in paths"))
    path = PurePosixPath(name)
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
        raise PackageRefused(T(f"{name!r}：不能用绝对路径",
                               f"{name!r}: absolute paths are not allowed"))
    if any(part in ("..", ".") for part in path.parts) or name.startswith("./"):
        raise PackageRefused(T(f"{name!r}：路径里不能有 '..' 或 '.'",
                               f"{name!r}: '..' and '.' are not allowed in paths"))
    return path.parts


def _write_new(dest: Path, data: bytes) -> None:
    """Create a file that must not exist yet, never following a symlink."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def unpack_zip(data: bytes, dest: Path, limits: UploadLimits = LIMITS) -> Problem:
    """Unpack an uploaded zip into the empty folder ``dest`` and load it. A single top
    folder in the archive (``my-problem/problem.toml``) is taken as the package root."""
    if len(data) > limits.archive_bytes:
        raise PackageRefused(T(f"压缩包有 {len(data)} 字节，上限是 {limits.archive_bytes}",
                               f"the archive is {len(data)} bytes; the limit is "
                               f"{limits.archive_bytes}"))
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except zipfile.BadZipFile:
        raise PackageRefused(T("上传的不是 zip 压缩包", "the upload is not a zip archive")
                             ) from None
    entries = []
    for info in archive.infolist():
        parts = _safe_parts(info.filename)
        if not parts or any(p in SKIPPED for p in parts):
            continue
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise PackageRefused(T(f"{info.filename!r}：不能有符号链接",
                                   f"{info.filename!r}: symbolic links are not allowed"))
        kind = stat.S_IFMT(mode)  # 0 when the archiver recorded permissions only
        if kind and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise PackageRefused(T(f"{info.filename!r}：只能有普通文件和文件夹",
                                   f"{info.filename!r}: only plain files and folders are "
                                   f"allowed"))
        if not info.is_dir():
            entries.append((parts, info))
    if not entries:
        raise PackageRefused(T("压缩包里没有文件", "the archive holds no files"))
    if len(entries) > limits.files:
        raise PackageRefused(T(f"压缩包里有 {len(entries)} 个文件，上限是 {limits.files}",
                               f"the archive holds {len(entries)} files; the limit is "
                               f"{limits.files}"))
    strip = _root_depth([parts for parts, _ in entries])
    seen: set[tuple[str, ...]] = set()
    total = 0
    dest.mkdir(parents=True, exist_ok=True)
    for parts, info in entries:
        rel = parts[strip:]
        if rel in seen:
            raise PackageRefused(T(f"{info.filename!r} 在压缩包里出现了两次",
                                   f"{info.filename!r} appears twice in the archive"))
        seen.add(rel)
        with archive.open(info) as f:
            content = f.read(limits.file_bytes + 1)  # never trust the declared size
        if len(content) > limits.file_bytes:
            raise PackageRefused(T(f"{info.filename!r} 超过 {limits.file_bytes} 字节",
                                   f"{info.filename!r} is larger than {limits.file_bytes} "
                                   f"bytes"))
        total += len(content)
        if total > limits.total_bytes:
            raise PackageRefused(T(f"压缩包解开后超过 {limits.total_bytes} 字节",
                                   f"the archive unpacks to more than {limits.total_bytes} "
                                   f"bytes"))
        _write_new(dest.joinpath(*rel), content)
    return load_problem(dest, named_by_slug=False)


def _root_depth(paths: list[tuple[str, ...]]) -> int:
    """1 when the package is the archive's one top folder, 0 when its files are at the
    top; PackageRefused for an archive of several top folders and no problem.toml."""
    if _single_folder(paths):
        return 1
    tops = sorted({p[0] for p in paths if len(p) > 1})
    if ("problem.toml",) not in set(paths) and len(tops) > 1:
        names = ", ".join(tops[:5])
        raise PackageRefused(T(f"压缩包顶层有 {len(tops)} 个文件夹（{names}）：一个压缩包只能放一个"
                               f"题目包，要么是一个文件夹，要么文件直接放在顶层",
                               f"the archive has {len(tops)} top-level folders ({names}): "
                               f"zip one package, as one folder or with its files at the top"))
    return 0


def _single_folder(paths: list[tuple[str, ...]]) -> bool:
    """Whether every file is under one top folder (the package root, then)."""
    return len({p[0] for p in paths}) == 1 and all(len(p) > 1 for p in paths)


def folder_name(data: bytes) -> str | None:
    """The top folder an uploaded zip holds its package in (``my-problem/problem.toml``),
    None when its files are at the top (or it is not a zip: unpacking says so)."""
    try:
        names = zipfile.ZipFile(BytesIO(data)).namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None
    paths = [PurePosixPath(n).parts for n in names if not n.endswith("/")]
    paths = [p for p in paths if p and not any(part in SKIPPED for part in p)]
    return paths[0][0] if paths and _single_folder(paths) else None


def copy_folder(src: Path, dest: Path, limits: UploadLimits = LIMITS) -> Problem:
    """Copy a package folder from disk with the same rules as an upload."""
    src = Path(src)
    if not (src / "problem.toml").is_file():
        raise PackageRefused(T(f"{src}：这里没有 problem.toml", f"{src}: no problem.toml here"))
    count, total = 0, 0
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any(p in SKIPPED for p in rel.parts):
            continue
        if path.is_symlink():
            raise PackageRefused(T(f"{rel}：不能有符号链接",
                                   f"{rel}: symbolic links are not allowed"))
        if path.is_dir():
            continue
        if not path.is_file():
            raise PackageRefused(T(f"{rel}：只能有普通文件和文件夹",
                                   f"{rel}: only plain files and folders are allowed"))
        count += 1
        size = path.stat().st_size
        total += size
        if count > limits.files or size > limits.file_bytes or total > limits.total_bytes:
            raise PackageRefused(T(
                f"{src}：太大了（最多 {limits.files} 个文件，每个最多 {limits.file_bytes} "
                f"字节，共 {limits.total_bytes} 字节）",
                f"{src}: too large (at most {limits.files} files of {limits.file_bytes} "
                f"bytes, {limits.total_bytes} in all)"))
        _write_new(dest / rel, path.read_bytes())
    return load_problem(dest, named_by_slug=False)
