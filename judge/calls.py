"""What a call into a runner gives back (:class:`CallResult`), what a case's calls may
spend (:class:`Budget`), what the grader and a case's ``Ctx`` use of a runner whatever
stands behind it (:class:`Session`), and a call begun to be read later (:class:`Pending`,
``t.ref.begin``). Re-exported by :mod:`judge.session` and :mod:`judge.testing`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class CallResult:
    value: Any
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Budget:
    """Wall-clock seconds a test case may spend inside the submission's calls."""

    seconds: float
    used: float = 0.0

    def deadline(self, start: float) -> float:
        return start + max(0.0, self.seconds - self.used)


class Session(Protocol):
    """What the grader and a case's ``Ctx`` use of a role's runner."""

    budget: Budget | None  # what the next call may spend (the case's; the reference's)

    @property
    def alive(self) -> bool: ...

    def start(self) -> None: ...

    def ready(self) -> dict[str, Any]: ...

    def call(self, target: str, fn: str, args: list, kwargs: dict, *,
             return_args: bool = False) -> CallResult: ...

    def output_mark(self) -> int: ...

    def output_since(self, mark: int) -> str: ...

    def memory_bytes(self) -> int | None: ...

    def close(self) -> None: ...



class Pending:
    """A call started by ``Proxy.begin``: ``result`` (a CallResult) and ``value`` wait
    for it the first time, and give the same answer (or raise the same error) after."""

    def __init__(self, finish: Callable[[], CallResult]) -> None:
        self._finish = finish
        self._outcome: CallResult | Exception | None = None

    @property
    def result(self) -> CallResult:
        if self._outcome is None:
            try:
                self._outcome = self._finish()
            except Exception as e:
                self._outcome = e
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome

    @property
    def value(self) -> Any:
        return self.result.value
