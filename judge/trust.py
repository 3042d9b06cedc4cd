"""Which packages' code the grader may run in its own process.

Bundled problems are trusted: they ship with the judge (``problems/``; CI checks them) and
their ``tests.py`` runs in the grader, as fast as it can. Every other package — an upload,
an edit of a bundled one, a folder named on the command line — is not, and its code runs in
a grader box (``judge/graderbox.py``) wherever submissions run in the sandbox.

The worker decides this by itself, from content: a package is trusted when its content hash
(``package_hash``: every file's path and bytes) equals that of a package in this
installation's own ``problems/`` folder, so a server cannot declare an upload trusted, and
a bundled problem edited on the server is a new, untrusted version.
"""

from __future__ import annotations

import functools

from judge.package import BUNDLED, Problem, package_hash


@functools.cache
def bundled_hashes() -> frozenset[str]:
    """The content hashes of the packages that shipped with this judge (computed once per
    process: the folder does not change under a running judge)."""
    if not BUNDLED.is_dir():
        return frozenset()
    return frozenset(package_hash(d) for d in sorted(BUNDLED.iterdir())
                     if d.is_dir() and (d / "problem.toml").is_file())


def is_bundled(problem: Problem) -> bool:
    return problem.content_hash in bundled_hashes()


def runs_confined(problem: Problem, isolation: str) -> bool:
    """Whether ``problem``'s own code must run in a grader box under a launcher of
    ``isolation``: under the sandbox, unless it is bundled. Without the sandbox
    (development, or a learner's own machine) it runs in the grader's process, as the
    submissions then do; ``judge.isolation.WARNING`` says so loudly."""
    return isolation == "bwrap" and not is_bundled(problem)
