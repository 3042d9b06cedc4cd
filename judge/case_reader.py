"""The one reader of a ``tests.py`` that does not run it: each case's declaration, from the
syntax tree (standard library only).

The web process shows public cases and routes CUDA problems to GPU workers without
importing a package (that needs torch, and runs the package's code); the practice pack
cuts hidden cases out of the file. All of them read the declarations here, so they agree
with each other, and a test checks that they agree with the imported suite
(:func:`judge.testing.collect`) for every bundled problem.

A case is a top-level function decorated with ``@case(...)`` or ``@testing.case(...)``
(any ``<module>.case``). Only literal arguments are read: ``public=True`` must be written
as such (anything else is hidden, the safe reading), and a ``device`` that is not a
literal string is taken as ``"cpu"``.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from judge.i18n import T


@dataclass(frozen=True)
class CaseDeclaration:
    name: str
    public: bool
    device: str
    category: T
    first_line: int  # 1-based: the first decorator's line
    last_line: int  # 1-based, inclusive

    @property
    def is_example(self) -> bool:
        return self.public and self.name.startswith("example")

    def source(self, text: str) -> str:
        """The case's code (decorators included), dedented, from the file's text."""
        lines = text.splitlines()
        return textwrap.dedent("\n".join(lines[self.first_line - 1:self.last_line]))


def _case_call(decorator: ast.expr) -> ast.Call | None:
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    if isinstance(func, ast.Name) and func.id == "case":
        return decorator
    if isinstance(func, ast.Attribute) and func.attr == "case":
        return decorator
    return None


def _literals(call: ast.Call) -> dict[str, object]:
    return {k.arg: k.value.value for k in call.keywords
            if k.arg and isinstance(k.value, ast.Constant)}


def read_cases(source: str, filename: str = "tests.py") -> list[CaseDeclaration]:
    """The cases a tests.py declares, in source order. SyntaxError if it does not parse."""
    found = []
    for node in ast.parse(source, filename).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        call = next((c for c in map(_case_call, node.decorator_list) if c is not None), None)
        if call is None:
            continue
        kw = _literals(call)
        device = kw.get("device", "cpu")
        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        found.append(CaseDeclaration(
            name=node.name, public=kw.get("public") is True,
            device=device if isinstance(device, str) else "cpu",
            category=T(str(kw.get("zh", "")), str(kw.get("en", ""))),
            first_line=first, last_line=node.end_lineno or node.lineno))
    return found


def _is_workload(decorator: ast.expr) -> bool:
    return ((isinstance(decorator, ast.Name) and decorator.id == "workload")
            or (isinstance(decorator, ast.Attribute) and decorator.attr == "workload"))


def read_workloads(source: str, filename: str = "tests.py") -> list[str]:
    """The names of the top-level functions decorated with ``@workload`` (or any
    ``<module>.workload``), in source order. SyntaxError if it does not parse."""
    return [node.name for node in ast.parse(source, filename).body
            if isinstance(node, ast.FunctionDef) and any(map(_is_workload, node.decorator_list))]


def declares_cuda(source: str) -> bool:
    """Whether any case is declared with ``device="cuda"``."""
    return any(c.device == "cuda" for c in read_cases(source))
