"""The ``phase`` progress event: what the worker's speed check is doing
(``{"event": "phase", "phase": ...}``), shown in the page's status line. The server reads
it by name, so a judge that does not send it yet and one that does both work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge.i18n import T

PHASES = {
    "waiting_for_quiet_machine": T("等待评测机空闲后再计时（另一份提交正在测速）…",
                                   "Waiting for a quiet machine to time your code (another "
                                   "submission is being timed)…"),
    "measuring": T("正在测量速度…", "Measuring the speed…"),
    "ranking": T("正在为排行榜测速…", "Measuring speed for the leaderboard…"),
}


@dataclass(frozen=True)
class Phase:
    phase: str

    def to_json(self, lang: str = "zh", *, learner: bool = False) -> dict[str, Any]:
        return {"event": "phase", "phase": self.phase}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Phase:
        if data.get("phase") not in PHASES:
            raise ValueError(f"unknown phase {data.get('phase')!r}")
        return cls(str(data["phase"]))
