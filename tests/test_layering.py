"""The shape of the code, checked: imports go one way (web -> judge -> sandbox). The sandbox
side needs only stdlib + torch, and so do the judge modules the practice pack ships.

Imports are read from the syntax tree, wherever they are (a function-level import is an
import too: it is how a cycle hides). ``importlib.import_module("...")`` strings are not
imports: ``python -m judge`` finds the web's commands through an entry point.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from judge.pack import CORE_MODULES

ROOT = Path(__file__).resolve().parent.parent
STDLIB = set(sys.stdlib_module_names)
PACKAGES = ("judge", "sandbox", "web")
LAYER = {"sandbox": 0, "judge": 1, "web": 2}  # a module may import its own layer or below


def imports(path: Path) -> set[str]:
    """Top-level package names a file imports."""
    return {name.split(".")[0] for name in imported_modules(path)}


def imported_modules(path: Path) -> set[str]:
    """Dotted names a file imports: ``import a.b`` gives a.b; ``from a.b import c`` gives
    a.b.c when that is a module of this project, else a.b."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if module_file(sub) is not None else node.module)
    return found


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def project_files() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
            if "alembic" not in p.parts or p.parent.name != "versions"]


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in project_files():
        graph[module_name(path)] = {m for m in imported_modules(path)
                                    if m.split(".")[0] in PACKAGES and module_file(m)}
    return graph


def test_sandbox_imports_only_stdlib_torch_and_itself():
    for path in (ROOT / "sandbox").rglob("*.py"):
        extra = imports(path) - STDLIB - {"torch", "sandbox", "seccomp", "pyseccomp"}
        assert not extra, f"{path.name} imports {extra}"


def test_imports_never_go_upward():
    for path in project_files():
        own = LAYER[module_name(path).split(".")[0]]
        upward = {m for m in imports(path) if LAYER.get(m, -1) > own}
        assert not upward, f"{path.relative_to(ROOT)} imports {upward}"


def test_judge_never_names_web_in_an_import():
    for path in (ROOT / "judge").rglob("*.py"):
        assert "web" not in imports(path), path.name


def test_practice_pack_modules_need_only_torch():
    for rel in CORE_MODULES:
        if not rel.endswith(".py"):
            continue
        extra = imports(ROOT / rel) - STDLIB - {"torch", "judge", "sandbox", "practice",
                                                "numpy"}
        assert not extra, f"{rel} imports {extra}"
