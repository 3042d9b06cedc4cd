"""The packages a worker judges with, by content hash: its own store, the server's
download, or (for a folder bank edited on disk) the problems folder's current version."""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from judge.package import PackageError, Problem, load_all, load_problem, package_hash
from judge.upload import unpack_zip

log = logging.getLogger("judge.worker")
HASH = re.compile(r"^[0-9a-f]{64}$")


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
        self.root, self.store, self.fetch = root, store, fetch
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
        if self.store is not None and (self.store / version).is_dir():
            found = load_problem(self.store / version, named_by_slug=False)
        elif self.store is not None and self.fetch is not None:
            found = self._download(version)
        if found is None:
            folder = [p for p in self.by_slug.values() if p.content_hash == version]
            found = folder[0] if folder else None
        if found is not None:
            self.by_hash[version] = found
        return found

    def _download(self, version: str) -> Problem | None:
        assert self.store is not None and self.fetch is not None
        data = self.fetch(version)
        if data is None:
            return None
        self.store.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=self.store))
        try:
            unpack_zip(data, tmp / "pkg")
            got = package_hash(tmp / "pkg")
            if got != version:
                raise PackageError(f"downloaded version {version[:12]} has content {got[:12]}")
            if not (self.store / version).is_dir():
                (tmp / "pkg").rename(self.store / version)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("downloaded problem version %s", version[:12])
        return load_problem(self.store / version, named_by_slug=False)

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
