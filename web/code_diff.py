"""A diff between two submissions' code (``/submissions/A/diff/B``), from Python's difflib.

The lines are data: the template escapes them like any text (no HTML is built here), so
code holding ``<script>`` shows as text. Who may diff is the caller's business
(``readable``: the owner of both, or an admin).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from web.models import Submission

CONTEXT = 3  # lines around each change, as `diff -u`
WHOLE = 1_000_000  # "context" that shows every line
HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Line:
    kind: str  # "hunk", "add", "del" or "same"
    text: str
    old: int | None = None  # its number in the older code (None: added)
    new: int | None = None  # its number in the newer code (None: removed)


@dataclass
class CodeDiff:
    old: Submission
    new: Submission
    unified: str
    lines: list[Line] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(line.kind == "add" for line in self.lines)

    @property
    def removed(self) -> int:
        return sum(line.kind == "del" for line in self.lines)

    @property
    def identical(self) -> bool:
        return self.old.code == self.new.code

    def to_json(self) -> dict:
        return {"from": self.old.id, "to": self.new.id, "identical": self.identical,
                "added": self.added, "removed": self.removed, "unified": self.unified}


def diff(old: Submission, new: Submission, context: int = CONTEXT) -> CodeDiff:
    """``old`` → ``new`` as a unified diff, and its lines numbered on both sides."""
    raw = list(difflib.unified_diff(old.code.splitlines(), new.code.splitlines(),
                                    fromfile=f"#{old.id}", tofile=f"#{new.id}",
                                    lineterm="", n=context))
    result = CodeDiff(old, new, "\n".join(raw) + ("\n" if raw else ""))
    old_no = new_no = 0
    for text in raw[2:]:  # after the --- and +++ header
        hunk = HUNK.match(text)
        if hunk:
            old_no, new_no = int(hunk[1]), int(hunk[2])
            result.lines.append(Line("hunk", text))
        elif text.startswith("+"):
            result.lines.append(Line("add", text[1:], None, new_no))
            new_no += 1
        elif text.startswith("-"):
            result.lines.append(Line("del", text[1:], old_no, None))
            old_no += 1
        else:
            result.lines.append(Line("same", text[1:], old_no, new_no))
            old_no, new_no = old_no + 1, new_no + 1
    return result
