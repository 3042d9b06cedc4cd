"""The catalog: the published problems as the site shows them (packages loaded once,
statements rendered once), reloaded when the bank changes.

The web process never imports a package's ``tests.py`` (that is the worker's job, and it
needs torch): the public cases shown as examples are read from its syntax tree by
``judge.case_reader``, the reader the practice pack cuts hidden cases out with. Only a
case whose decorator literally says ``public=True`` is shown; anything else is hidden.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from judge.case_reader import read_cases
from judge.i18n import T
from judge.package import DIFFICULTY, PackageError, Problem, load_all, problems_dir
from web import markdown

log = logging.getLogger("web.problems")


@dataclass(frozen=True)
class Example:
    name: str
    category: T
    code: str

    @property
    def is_example(self) -> bool:
        return self.name.startswith("example")


def public_cases(tests_source: str) -> list[Example]:
    """The public cases of a tests.py, in order, with their code (judge.case_reader)."""
    return [Example(c.name, c.category, c.source(tests_source))
            for c in read_cases(tests_source) if c.public]


@dataclass
class ProblemView:
    """A package plus what the pages and the API show of it."""

    problem: Problem
    _html: dict[str, str] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return self.problem.slug

    @property
    def number(self) -> int:
        return self.problem.number

    @property
    def meta(self):
        return self.problem.meta

    def title(self, lang: str) -> str:
        return self.meta.title.en if lang == "en" else self.meta.title.zh

    def difficulty(self, lang: str) -> str:
        return DIFFICULTY[self.meta.difficulty](lang)

    @cached_property
    def version(self) -> str:
        return self.problem.content_hash

    @cached_property
    def starter(self) -> str:
        return self.problem.starter

    def statement(self, lang: str) -> str:
        return self.problem.statement(lang)

    def statement_html(self, lang: str) -> str:
        if lang not in self._html:
            self._html[lang] = markdown.render(self.statement(lang))
        return self._html[lang]

    def rendered(self, key: str, render: Callable[[], str]) -> str:
        """What a page renders from this version alone (``render()``), rendered once: a
        version's files never change."""
        if key not in self._html:
            self._html[key] = render()
        return self._html[key]

    @cached_property
    def has_solution(self) -> bool:  # a version's files never change: one look at the disk
        return self.problem.has_solution

    def solution_html(self, lang: str) -> str | None:
        """The explanation of the reference, sanitised like the statement (web.solutions
        shows it only to those who solved the problem)."""
        key = f"solution.{lang}"
        if key not in self._html:
            text = self.problem.solution(lang)
            self._html[key] = "" if text is None else markdown.render(text)
        return self._html[key] or None

    @cached_property
    def reference(self) -> str | None:
        """reference.py's source (a stored bank package always has one)."""
        path = self.problem.dir / "reference.py"
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def check_titles(self, lang: str) -> dict[str, str]:
        """The speed checks' titles, by the name a worker's ``running`` event gives them
        (``throughput:<name>``); a check without a title is named by its name."""
        return {f"throughput:{t.name}": (t.title.en if lang == "en" else t.title.zh)
                if t.title else t.name for t in self.meta.throughput}

    @cached_property
    def examples(self) -> list[Example]:
        return public_cases(self.problem.read("tests.py"))

    @property
    def needs_gpu(self) -> bool:
        """Judged by GPU workers only: every case needs CUDA."""
        return self.meta.requires.cuda

    @cached_property
    def prefers_gpu(self) -> bool:
        """Some cases or speed checks run on CUDA: a GPU worker should judge it."""
        return self.problem.uses_cuda


class Catalog:
    """The problems learners see. ``Catalog(folder)`` reads a folder of packages;
    ``Catalog(source=...)`` asks a function for them (the app's: the published
    versions of the database-backed bank, see judge/problem_store.py)."""

    def __init__(self, root: Path | None = None, *,
                 source: Callable[[], list[Problem]] | None = None) -> None:
        self.root = Path(root) if root else problems_dir()
        self.source = source or (lambda: load_all(self.root))
        self._set([ProblemView(p) for p in self.source()])

    on_change: Callable[[], None] | None = None  # the app's page cache: a new generation

    def _set(self, problems: list[ProblemView]) -> None:
        self.problems, self._by_slug = problems, {p.slug: p for p in problems}
        self.__dict__.pop("version", None)
        if self.on_change is not None:
            self.on_change()

    def refresh(self) -> bool:
        """Reload when a package changed (or one came or went), so that new submissions
        record the version the workers will judge. A broken bank (an edit on disk in
        progress) keeps the old one. True when something changed."""
        try:
            fresh = self.source()
        except PackageError as e:
            log.error("the problem bank is broken, keeping the loaded one: %s", e)
            return False
        if ({p.slug: p.content_hash for p in fresh}
                == {p.slug: p.version for p in self.problems}):
            return False
        log.info("problem bank changed: reloaded")
        self._set([ProblemView(p) for p in fresh])
        return True

    def get(self, ident: str | int) -> ProblemView | None:
        """By slug or number; None when there is no such problem."""
        text = str(ident).strip()
        if text in self._by_slug:
            return self._by_slug[text]
        if text.isdigit():
            return next((p for p in self.problems if p.number == int(text)), None)
        return None

    def __iter__(self):
        return iter(self.problems)

    @cached_property
    def version(self) -> str:
        """Changes whenever any package changes (names the cached practice pack)."""
        import hashlib

        h = hashlib.sha256()
        for p in self.problems:
            h.update(f"{p.slug}:{p.version}\n".encode())
        return h.hexdigest()[:16]
