"""The deployment's problem bank on disk: every package version stored once, immutably,
under its content hash (``DATA_DIR/bank/<sha256>/``), and the folder of bundled problems
seeded into it.

A version enters the store only through :mod:`judge.upload` (the same checks for a zip, a
folder from the CLI, or an admin's edit: no symlinks, no ``..``, size caps), is loaded
(schema-checked, never imported: the web process does not run package code), has the files
the web process reads checked (UTF-8 text; ``tests.py`` must parse, since its public cases
are read from its syntax tree) and is renamed into place atomically. A caller whose later
step fails removes a folder it wrote with :meth:`Store.discard`. Which versions exist,
their validation and which one learners see are in the database
(``web.models.ProblemVersion``); this module only holds the files.

Bundled problems (``JUDGE_PROBLEMS_DIR``, default ``./problems``) are trusted: they are
validated by ``python -m judge check`` in CI, so seeding stores them as ``valid`` and
publishes them, at the first start and whenever the folder changes (checked every 10 s,
like before the bank moved into the database). An admin takes a problem over by
uploading or editing a version of it, or by unpublishing it: from then on changes in the
folder are stored as valid versions but not published.
"""

from __future__ import annotations

import ast
import io
import logging
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from judge.i18n import T
from judge.package import REQUIRED_FILES, PackageError, Problem, load_problem, package_hash
from judge.upload import PackageRefused, copy_folder, unpack_zip

log = logging.getLogger("web.bank")
HASH = re.compile(r"^[0-9a-f]{64}$")
STAGING = "pkg"  # the folder a package is unpacked into before it is renamed into place


@dataclass(frozen=True)
class Stored:
    """A package in the store; ``new`` when this call wrote its folder (a caller whose
    next step fails discards it, so no folder is left without a version row)."""

    problem: Problem
    new: bool


class Store:
    """Package versions by content hash, in one folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, content_hash: str) -> Path:
        if not HASH.match(content_hash):
            raise PackageError(f"{content_hash!r} is not a package version")
        return self.root / content_hash

    def has(self, content_hash: str) -> bool:
        return HASH.match(content_hash) is not None and self.path(content_hash).is_dir()

    def load(self, content_hash: str) -> Problem:
        """The stored version (PackageError if it is not here)."""
        return _load(self.path(content_hash))

    def add_zip(self, data: bytes) -> Problem:
        """Store an uploaded zip (refused with PackageError saying why)."""
        return self.put(zip_data=data).problem

    def add_folder(self, src: Path) -> Problem:
        """Store a package folder (the CLI, the bundled problems)."""
        return self.put(folder=src).problem

    def add_files(self, files: dict[str, bytes]) -> Problem:
        """Store a package given as {relative path: content} (an admin's edit), through
        the same checks as an upload."""
        return self.put(files=files).problem

    def put(self, *, zip_data: bytes | None = None, folder: Path | None = None,
            files: dict[str, bytes] | None = None) -> Stored:
        """Store one package (a zip, a folder, or files by relative path), saying whether
        this call wrote its folder. PackageError saying why when it is refused."""
        if files is not None:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for name, content in sorted(files.items()):
                    archive.writestr(name, content)
            zip_data = buffer.getvalue()
        if zip_data is not None:
            data = zip_data
            return self._add(lambda dest: unpack_zip(data, dest))
        if folder is None:
            raise ValueError("put() needs a zip, a folder or files")
        src = Path(folder)
        return self._add(lambda dest: copy_folder(src, dest))

    def _add(self, unpack) -> Stored:
        tmp = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
        staged = tmp / STAGING
        try:
            try:
                unpack(staged)
            except PackageError as e:
                raise _without_staging_name(e) from None
            except UnicodeDecodeError as e:  # problem.toml, read while loading
                raise PackageRefused(T(f"problem.toml 不是 UTF-8 文本（第 {e.start} 字节）",
                                       f"problem.toml is not UTF-8 text (byte {e.start})")
                                     ) from None
            check_readable(staged)
            content_hash = package_hash(staged)
            final = self.root / content_hash
            new = False
            if not final.is_dir():
                try:
                    staged.rename(final)  # atomic: a version is whole or absent
                    new = True
                except OSError:
                    if not final.is_dir():  # else the same content just arrived
                        raise
            return Stored(_load(final), new)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def discard(self, content_hash: str) -> None:
        """Remove a version's folder (one that :meth:`put` wrote and no version row
        uses: the step after storing it failed)."""
        shutil.rmtree(self.path(content_hash), ignore_errors=True)
        _load.cache_clear()

    def files(self, content_hash: str) -> dict[str, bytes]:
        """Every file of a version, by relative path (what an edit starts from)."""
        root = self.path(content_hash)
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts}

    def zip_bytes(self, content_hash: str) -> bytes:
        """A version as a zip (what a remote worker downloads)."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, content in self.files(content_hash).items():
                archive.writestr(name, content)
        return buffer.getvalue()


TEXT_FILES = REQUIRED_FILES  # problem.toml, statements, starter.py, tests.py: the web reads them


def check_readable(folder: Path) -> None:
    """Refuse (PackageRefused) a package whose files the web process reads are not UTF-8
    text, or whose tests.py does not parse: every page showing it would fail."""
    for name in TEXT_FILES:
        try:
            (folder / name).read_bytes().decode("utf-8")
        except UnicodeDecodeError as e:
            raise PackageRefused(T(f"{name} 不是 UTF-8 文本（第 {e.start} 字节）",
                                   f"{name} is not UTF-8 text (byte {e.start})")) from None
    try:
        ast.parse((folder / "tests.py").read_text(encoding="utf-8"), "tests.py")
    except SyntaxError as e:
        where = f"{e.lineno}" if e.lineno else "?"
        raise PackageRefused(T(f"tests.py 有语法错误（第 {where} 行）：{e.msg}",
                               f"tests.py has a syntax error on line {where}: {e.msg}")
                             ) from None
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, absurd nesting
        raise PackageRefused(T(f"tests.py 无法解析：{type(e).__name__}: {e}",
                               f"tests.py cannot be parsed: {type(e).__name__}: {e}")
                             ) from None


def _without_staging_name(e: PackageError) -> PackageError:
    """The loader names files after the folder it reads (``pkg/problem.toml``): that
    folder is internal, so the reason names the file as the uploader knows it."""
    text = str(e)
    for prefix in (f"{STAGING}/", f"{STAGING}: "):
        if text.startswith(prefix):
            return PackageError(text[len(prefix):])
    return e


@lru_cache(maxsize=512)
def _load(folder: Path) -> Problem:
    # Stored versions never change, so a loaded one can be reused.
    return load_problem(folder, named_by_slug=False)


def bundled_packages(folder: Path | None) -> list[Path]:
    """The package folders of a problems folder (``_template`` and dot-folders skipped)."""
    if folder is None or not Path(folder).is_dir():
        return []
    return [p for p in sorted(Path(folder).iterdir())
            if p.is_dir() and not p.name.startswith(("_", "."))]
