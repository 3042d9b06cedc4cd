"""The practice pack download: built by ``python -m judge pack`` in a child process (it
runs the reference to record the public answers, which needs torch and a launcher; the web
process has neither), cached in the data folder per version of the problem catalog."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from judge.package import ROOT
from judge.upload import copy_folder
from web.catalog import Catalog
from web.settings import Settings

log = logging.getLogger("web.practice_pack")
BUILD_TIMEOUT_S = 600


class PackError(RuntimeError):
    """The pack could not be built; the message is the builder's last words."""


class PackBuilder:
    def __init__(self, settings: Settings, catalog: Catalog) -> None:
        self.settings, self.catalog = settings, catalog
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None

    @property
    def path(self) -> Path:
        return self.settings.data_dir / "packs" / f"practice-{self.catalog.version}.zip"

    def get(self) -> Path:
        """The pack's file, built on first use (one build at a time)."""
        if self.path.is_file():
            return self.path
        with self.lock:
            if not self.path.is_file():
                self._build()
        return self.path

    def _build(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".partial")
        cmd = [sys.executable, "-m", "judge", "pack", str(tmp)]
        if self.settings.no_sandbox:
            cmd.append("--no-sandbox")
        env = {**os.environ, "JUDGE_PROBLEMS_DIR": str(self._published_folder())}
        log.info("building the practice pack: %s", " ".join(cmd))
        # niced: it must not slow down (or skew the speed checks of) judging
        self.process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        preexec_fn=lambda: os.nice(10))
        try:
            output, _ = self.process.communicate(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise PackError(f"building the pack took more than {BUILD_TIMEOUT_S} s") from None
        finally:
            code, self.process = self.process.returncode, None
        if code != 0 or not tmp.is_file():
            tail = (output or "").strip().splitlines()[-5:]
            log.error("practice pack build failed (%s): %s", code, "\n".join(tail))
            raise PackError("\n".join(tail) or f"exit status {code}")
        if "left out" in (output or ""):
            log.error("practice pack built without some problems:\n%s", output.strip())
        tmp.replace(self.path)

    def _published_folder(self) -> Path:
        """The published packages as one folder of slug-named packages (what ``judge
        pack`` reads), copied from the bank once per bank version."""
        folder = self.settings.data_dir / "packs" / f"src-{self.catalog.version}"
        if not folder.is_dir():
            partial = folder.with_name(folder.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            for p in self.catalog:
                copy_folder(p.problem.dir, partial / p.slug)
            partial.mkdir(parents=True, exist_ok=True)
            partial.rename(folder)
        return folder

    def close(self) -> None:
        """Stop a build in progress (the app is shutting down)."""
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
