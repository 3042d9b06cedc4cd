"""Imports go one way: web -> judge -> sandbox. The sandbox side needs only stdlib + torch,
and so do the judge modules the practice pack ships."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from judge.pack import CORE_MODULES

ROOT = Path(__file__).resolve().parent.parent
STDLIB = set(sys.stdlib_module_names)


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_sandbox_imports_only_stdlib_torch_and_itself():
    for path in (ROOT / "sandbox").rglob("*.py"):
        extra = imports(path) - STDLIB - {"torch", "sandbox", "seccomp", "pyseccomp"}
        assert not extra, f"{path.name} imports {extra}"


def test_judge_never_imports_web():
    for path in (ROOT / "judge").rglob("*.py"):
        if path.name in {"cli_server.py", "cli_admin.py", "worker.py"}:
            # the server's commands (serve, the admin CLI on its data folder) need the web
            # extras; the worker talks to the web app over HTTP only
            continue
        assert "web" not in imports(path), path.name


def test_practice_pack_modules_need_only_torch():
    for rel in CORE_MODULES:
        if not rel.endswith(".py"):
            continue
        extra = imports(ROOT / rel) - STDLIB - {"torch", "judge", "sandbox", "practice",
                                                "numpy"}
        assert not extra, f"{rel} imports {extra}"
