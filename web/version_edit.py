"""An admin's edit of a version, as the edit page makes it: which text files it edits and
the ``[limits]`` of problem.toml, changed in place (other lines and comments kept). The
result is a new version, stored through the same checks as an upload."""

from __future__ import annotations

import re
import tomllib
from typing import Any

EDITABLE_TEXT = ("statement.zh.md", "statement.en.md", "tests.py")


LIMIT_FIELDS = {"case_wall_s": float, "cpu_s": float, "memory_mb": int, "output_kb": int}


def set_limits(toml_text: str, limits: dict[str, Any]) -> str:
    """problem.toml with the [limits] values replaced (other lines, comments included,
    kept as they are)."""
    lines = toml_text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "[limits]"), None)
    if start is None:
        lines += ["", "[limits]"]
        start = len(lines) - 1
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip().startswith("[")), len(lines))
    for key, value in limits.items():
        line = f"{key} = {value}"
        found = next((i for i in range(start + 1, end)
                      if re.match(rf"\s*{key}\s*=", lines[i])), None)
        if found is None:
            lines.insert(end, line)
            end += 1
        else:
            lines[found] = line
    return "\n".join(lines) + "\n"


def current_limits(toml_text: str) -> dict[str, Any]:
    try:
        return dict(tomllib.loads(toml_text).get("limits", {}))
    except tomllib.TOMLDecodeError:
        return {}
