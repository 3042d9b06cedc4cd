"""Hidden cases begun ahead: while the grader checks one case's answers, the runners
already compute the next case's calls.

A case written as a generator function yields once, after it has begun its calls
(``t.sub.begin``, ``t.ref.begin``) and before it reads their answers::

    @case(zh="随机批次", en="random batches")
    def random_batches(t):
        checks = [begin_collate(t, make_batch(t)) for _ in range(6)]
        yield               # the calls are out: the grader may begin the next case
        check_all(checks)

Between two such hidden cases the grader runs the first part of the next one before the
second part of the current one (:func:`judge.grader._run_cases`), so that a case no longer
waits a round trip for its answers, and the grader builds and encodes the next inputs
while the runners compute (padding-collate's correctness verdict without a head start:
0.010-0.030 s less, README "Verdicts in two seconds").

What a case may rely on:

* Its calls reach each runner after the earlier cases' calls and before the later ones',
  as before; what changes is that the next case's calls may be *sent* before this case's
  second part runs, so a call the second part makes (a plain ``t.sub.f(x)``) reaches the
  runner after them. Write a case this way only where the order of calls on a runner does
  not matter (pure functions: collate, a sampler built afresh).
* Its budget counts, as always, the time it waits for its own answers.
* Only hidden cases are begun ahead: what a public case printed is shown under it, and a
  case begun while it runs would print into it. Public cases, and hidden cases that are
  plain functions, run whole in their turn.
* A case begun ahead is judged only in its turn, and is reported as not run if the
  judging stops before (a hidden case failed; a limit was hit). If its first part raised,
  or a runner it began its calls on has ended since (the case before crashed it), its
  first part is thrown away and the whole case runs again in its turn, with the same seed
  and so the same inputs.
* A practice pack's replay (``practice/judge.py``) and ``bench/latency.py``'s bare run
  the two parts one after the other (:func:`run_body`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

ROLES = ("sub", "ref")


def run_body(fn: Callable[[Any], Any], ctx: Any) -> None:
    """Run a case function to its end: a generator case's two parts one after the other."""
    body = fn(ctx)
    if inspect.isgenerator(body):
        for _ in body:
            pass


def begins_ahead(fn: Callable[..., Any], public: bool) -> bool:
    """Whether a case may be begun ahead: a hidden case written as a generator."""
    return not public and inspect.isgeneratorfunction(fn)


@dataclass
class Begun:
    """A case whose first part has run: its context, the rest of it (None: it ended
    without yielding), and the runners its calls went to."""

    ctx: Any
    rest: Generator[Any, None, None] | None
    runners: dict[str, Any]

    def usable(self, current: dict[str, Any]) -> bool:
        """Whether the runners it began its calls on are still the ones in use."""
        return all(session.alive and current.get(role) is session
                   for role, session in self.runners.items())

    def finish(self) -> None:
        """Run the second part (raises what the case raises)."""
        if self.rest is not None:
            for _ in self.rest:
                pass

    def drop(self) -> None:
        """Not to be finished: the judging stopped before its turn."""
        if self.rest is not None:
            self.rest.close()


def begin(fn: Callable[[Any], Any], ctx: Any, current: dict[str, Any]) -> Begun | None:
    """Run a generator case's first part, up to its yield. None when it raised: the case
    is run again, whole, in its turn (see the module's docstring)."""
    runners = {role: current[role] for role in ROLES if role in current}
    body = fn(ctx)
    try:
        next(body)
    except StopIteration:
        return Begun(ctx, None, runners)
    except Exception:
        body.close()
        return None
    return Begun(ctx, body, runners)
