"""The deployment's problem bank on disk: every package version stored once, immutably,
under its content hash (``DATA_DIR/bank/<sha256>/``), and the folder of bundled problems
seeded into it.

A version enters the store only through :mod:`judge.upload` (the same checks for a zip, a
folder from the CLI, or an admin's edit: no symlinks, no ``..``, size caps), is loaded
(schema-checked, never imported: the web process does not run package code) and renamed
into place atomically. Which versions exist, their validation and which one learners see
are in the database (``web.models.ProblemVersion``); this module only holds the files.

Bundled problems (``JUDGE_PROBLEMS_DIR``, default ``./problems``) are trusted: they are
validated by ``python -m judge check`` in CI, so seeding stores them as ``valid`` and
publishes them, at the first start and whenever the folder changes (checked every 10 s,
like before the bank moved into the database). An admin takes a problem over by
uploading or editing a version of it, or by unpublishing it: from then on changes in the
folder are stored as valid versions but not published.
"""

from __future__ import annotations

import io
import logging
import re
import shutil
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path

from judge.package import PackageError, Problem, load_problem, package_hash
from judge.upload import copy_folder, unpack_zip

log = logging.getLogger("web.bank")
HASH = re.compile(r"^[0-9a-f]{64}$")


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
        return self._add(lambda dest: unpack_zip(data, dest))

    def add_folder(self, src: Path) -> Problem:
        """Store a package folder (the CLI, the bundled problems)."""
        return self._add(lambda dest: copy_folder(Path(src), dest))

    def add_files(self, files: dict[str, bytes]) -> Problem:
        """Store a package given as {relative path: content} (an admin's edit), through
        the same checks as an upload."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, content in sorted(files.items()):
                archive.writestr(name, content)
        return self.add_zip(buffer.getvalue())

    def _add(self, unpack) -> Problem:
        tmp = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
        try:
            unpack(tmp / "pkg")
            content_hash = package_hash(tmp / "pkg")
            final = self.root / content_hash
            if not final.is_dir():
                (tmp / "pkg").rename(final)  # atomic: a version is whole or absent
            return _load(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

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
