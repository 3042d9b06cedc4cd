"""The shape of the code, checked: imports go one way (web -> judge -> sandbox) and never
in a circle between modules; the sandbox side needs only stdlib + torch, and so do the
judge modules the practice pack ships; no function is over 60 lines and no module over 450.

Imports are read from the syntax tree, wherever they are (a function-level import is an
import too: it is how a cycle hides). ``importlib.import_module("...")`` strings are not
imports: ``python -m judge`` finds the web's commands through an entry point. Alembic's
migration files (web/alembic/versions: generated, frozen history) are left out.
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
MAX_FUNCTION_LINES = 60  # def line to last line, docstring and comments included
MAX_MODULE_LINES = 450


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
    # node_modules: npm packages (KaTeX ships Python scripts of its own)
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
            if ("alembic" not in p.parts or p.parent.name != "versions")
            and "node_modules" not in p.parts]


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


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One cycle through the component's first module, as a path that ends where it began
    (the shortest, found breadth first within the component)."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{component} is not a cycle")


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return [a_cycle(graph, c) for c in strongly_connected(graph)
            if len(c) > 1 or c[0] in graph[c[0]]]


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles (break each; an import inside a function counts):\n" + \
        "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_no_module_is_too_long():
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in project_files()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split along a seam):\n" + \
        "\n".join(long)


def test_no_function_is_too_long():
    long = []
    for path in project_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (one thing each):\n" + \
        "\n".join(long)
