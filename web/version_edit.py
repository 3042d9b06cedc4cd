"""An admin's edit of a version, as the edit page makes it: every text file of the package
(statements, tests, problem.toml, reference, starter, solutions, fixtures ...; one save may
change any number of them) and the ``[limits]`` of problem.toml, changed in place (other
lines and comments kept). The result is a new version, stored through the same checks as
an upload. Also the diff between two versions' files (the compare page)."""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from typing import Any

EDITABLE_TEXT = ("statement.zh.md", "statement.en.md", "tests.py")


LIMIT_FIELDS = {"case_wall_s": float, "cpu_s": float, "memory_mb": int, "output_kb": int}
# The package's other text files, each an optional field of the edit form (a file the
# package does not have is not offered): form field -> file.
MORE_TEXT = {"problem_toml": "problem.toml", "reference_py": "reference.py",
             "starter_py": "starter.py", "fixture_py": "fixture.py"}
# Every other text file (solution.*.md, submissions/**/*.py, data files ...) is the field
# "text:<path>"; one larger than this is replaced by uploading it (a form field of a
# megabyte is refused by the form parser, and nobody edits that in a textarea).
TEXT_FIELD = "text:"
TEXT_LIMIT = 256 * 1024
TEXT_TOTAL = 8 * 1024 * 1024  # all of them: the form stays well under an admin's body limit


def other_texts(files: dict[str, bytes]) -> dict[str, str]:
    """The package's other text files (UTF-8, no NUL byte, at most TEXT_LIMIT bytes, and
    TEXT_TOTAL in all) by path, each a field ``text:<path>`` of the edit form: the
    solutions first, then the rest in path order (the fixtures under ``submissions/``)."""
    fixed = set(EDITABLE_TEXT) | set(MORE_TEXT.values())
    found: dict[str, str] = {}
    total = 0
    for name in sorted(files, key=lambda n: (not n.startswith("solution."), n)):
        data = files[name]
        if (name in fixed or len(data) > TEXT_LIMIT or total + len(data) > TEXT_TOTAL
                or b"\0" in data):
            continue
        try:
            found[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        total += len(data)
    return found


def apply_texts(files: dict[str, bytes], form: Any) -> None:
    """Put the edited text files of the form (MORE_TEXT and every ``text:<path>`` of
    :func:`other_texts`) into ``files``; one save may change any number of them. A field
    whose text is the file's own (line endings aside: a browser sends CRLF) leaves the
    file's bytes as they were."""
    fields = {**MORE_TEXT, **{TEXT_FIELD + name: name for name in other_texts(files)}}
    for field, name in fields.items():
        value = form.get(field)
        if not isinstance(value, str) or name not in files:
            continue
        text = value.replace("\r\n", "\n")
        if text != files[name].decode("utf-8", "replace").replace("\r\n", "\n"):
            files[name] = text.encode()


def changed_limits(base_toml: str, limits: dict[str, Any]) -> dict[str, Any]:
    """The limit fields the admin changed (a problem.toml edited in its own field keeps
    the limits written there unless the limit fields say otherwise)."""
    base = current_limits(base_toml)
    return {key: value for key, value in limits.items() if base.get(key) != value}


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


@dataclass(frozen=True)
class FileDiff:
    """How one file differs between two versions: ``status`` is added, removed or
    changed; ``lines`` a unified diff (empty for a file that is not UTF-8 text)."""

    name: str
    status: str
    lines: tuple[str, ...]


def diff(old: dict[str, bytes], new: dict[str, bytes], *, old_name: str = "a",
         new_name: str = "b") -> list[FileDiff]:
    """Every file that differs between two versions' files, by path (problem.toml and
    the statements first, as an author reads them)."""
    first = {"problem.toml": 0, "statement.zh.md": 1, "statement.en.md": 2, "tests.py": 3}
    names = sorted(set(old) | set(new), key=lambda n: (first.get(n, 4), n))
    found = []
    for name in names:
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        status = "added" if a is None else "removed" if b is None else "changed"
        try:
            a_lines = (a or b"").decode("utf-8").splitlines()
            b_lines = (b or b"").decode("utf-8").splitlines()
        except UnicodeDecodeError:
            found.append(FileDiff(name, status, ()))
            continue
        lines = difflib.unified_diff(a_lines, b_lines, f"{old_name}/{name}",
                                     f"{new_name}/{name}", lineterm="", n=2)
        found.append(FileDiff(name, status, tuple(lines)))
    return found
