"""Problem packages by content hash: the :class:`Store` of immutable versions (the server's
bank, ``DATA_DIR/bank/<sha256>/``, and a remote worker's cache), and :class:`Problems`,
the packages a worker judges with.

A version enters a store only through :meth:`Store.put`: unpacked by :mod:`judge.upload`
(the same checks for a zip, a folder from the CLI, an admin's edit or a worker's download:
no symlinks, no ``..``, size caps), loaded (schema-checked, never imported), with the files
the web process reads checked (UTF-8 text; ``tests.py`` must parse, since its cases are
read from its syntax tree by :mod:`judge.case_reader`), and renamed into place
atomically under its content hash. A caller whose later step fails removes a folder it
wrote with :meth:`Store.discard`. Which versions exist and which one learners see is the
web's database's business; this module only holds the files (no database code).
"""

from __future__ import annotations

import io
import logging
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from judge.case_reader import read_cases
from judge.i18n import T
from judge.package import (
    REQUIRED_FILES,
    PackageError,
    Problem,
    load_all,
    load_problem,
    package_hash,
)
from judge.upload import PackageRefused, copy_folder, folder_name, unpack_zip

log = logging.getLogger("judge.problem_store")
HASH = re.compile(r"^[0-9a-f]{64}$")
STAGING = "pkg"  # the folder a package is unpacked into before it is renamed into place


@dataclass(frozen=True)
class Stored:
    """A package in the store; ``new`` when this call wrote its folder (a caller whose
    next step fails discards it, so no folder is left without a version row)."""

    problem: Problem
    new: bool
    # The folder the package came in (a zip's top folder, a folder's name), which must be
    # its slug (judge/lint.py); None when its files came without one.
    source_name: str | None = None


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
            stored = self._add(lambda dest: unpack_zip(data, dest))
            return replace(stored, source_name=None if files is not None else folder_name(data))
        if folder is None:
            raise ValueError("put() needs a zip, a folder or files")
        src = Path(folder)
        return replace(self._add(lambda dest: copy_folder(src, dest)),
                       source_name=src.resolve().name)

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
        read_cases((folder / "tests.py").read_text(encoding="utf-8"))
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


class Problems:
    """The packages a worker judges with.

    A job names a package version by content hash. The worker looks for it in its store
    (``store/<hash>/``: the server's bank for embedded workers, which share the data
    folder; a cache folder for workers on other machines), else downloads it from the
    server (``GET /worker/packages/<hash>.zip``, worker token) into the store, checking
    the zip like an upload and the content against the hash. When neither has it (a
    bank folder edited outside the server), it falls back to the problems folder: the
    package of that slug at its current version, which the report then names.
    """

    def __init__(self, root: Path | None, *, store: Path | None = None,
                 fetch: Callable[[str], bytes | None] | None = None) -> None:
        self.root, self.fetch = root, fetch
        self.store = Store(store) if store is not None else None
        self.by_slug: dict[str, Problem] = {}
        self.by_hash: dict[str, Problem] = {}
        try:
            self.reload()
        except (PackageError, OSError) as e:
            if store is None:
                raise
            log.warning("the problems folder cannot be loaded (%s); using the store only", e)

    def reload(self) -> None:
        self.by_slug = {p.slug: p for p in load_all(self.root)}

    def exact(self, version: str) -> Problem | None:
        """The package at exactly this version, from the store or the server; None if
        neither has it."""
        if version in self.by_hash:
            return self.by_hash[version]
        if not HASH.match(version or ""):
            return None
        found: Problem | None = None
        if self.store is not None and self.store.has(version):
            found = self.store.load(version)
        elif self.store is not None and self.fetch is not None:
            found = self._download(version)
        if found is None:
            folder = [p for p in self.by_slug.values() if p.content_hash == version]
            found = folder[0] if folder else None
        if found is not None:
            self.by_hash[version] = found
        return found

    def _download(self, version: str) -> Problem | None:
        """Fetch a version from the server into the store: checked like an upload (the
        same Store.put), and its content must hash to the version asked for."""
        assert self.store is not None and self.fetch is not None
        data = self.fetch(version)
        if data is None:
            return None
        stored = self.store.put(zip_data=data)
        got = stored.problem.content_hash
        if got != version:
            if stored.new:
                self.store.discard(got)
            raise PackageError(f"downloaded version {version[:12]} has content {got[:12]}")
        log.info("downloaded problem version %s", version[:12])
        return stored.problem

    def get(self, slug: str, version: str) -> Problem | None:
        """The package at ``version``; when that version is nowhere to be had, the
        current one in the problems folder, which the report then names; None if the
        problem itself is gone."""
        try:
            p = self.exact(version)
        except (PackageError, OSError) as e:
            log.error("cannot get %s %s: %s", slug, version[:12], e)
            p = None
        if p is not None and p.slug == slug:
            return p
        p = self.by_slug.get(slug)
        if p is None or p.content_hash != version:
            try:
                self.reload()
            except (PackageError, OSError) as e:
                log.error("cannot reload the problems: %s", e)
            p = self.by_slug.get(slug)
            if p is not None and p.content_hash != version:
                log.warning("%s %s is gone: judging the current version %s", slug,
                            version[:12], p.content_hash[:12])
        return p
