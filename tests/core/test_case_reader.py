"""judge.case_reader: the declarations of a tests.py read without running it, as the pack,
the web pages and the queue see them; they agree with the imported suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.case_reader import declares_cuda, read_cases, read_workloads
from judge.pack import public_tests_source
from judge.package import load_problem
from judge.testing import collect

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted(p.parent for p in (ROOT / "problems").glob("*/problem.toml"))

TESTS = '''
from judge import testing
from judge.testing import case

@case(public=True, zh="样例", en="example")
def example_one(t):
    pass

@testing.case(public=True, zh="模块写法", en="module style", device="cuda")
def public_module_style(t):
    pass

@case(zh="隐藏", en="hidden")
def hidden_one(t):
    pass

FLAG = True

@case(public=FLAG, zh="看起来公开", en="looks public")
def not_literal(t):
    pass

def helper():
    case(device="cuda")  # a call, not a declaration
'''


def test_both_decorator_styles_are_read_in_order():
    cases = read_cases(TESTS)
    assert [(c.name, c.public, c.device) for c in cases] == [
        ("example_one", True, "cpu"), ("public_module_style", True, "cuda"),
        ("hidden_one", False, "cpu"), ("not_literal", False, "cpu")]
    assert cases[0].is_example and not cases[1].is_example
    assert cases[1].category.zh == "模块写法" and cases[1].category.en == "module style"


def test_a_case_source_is_its_decorators_and_body():
    cases = read_cases(TESTS)
    code = cases[1].source(TESTS)
    assert code.startswith('@testing.case(public=True, zh="模块写法"')
    assert code.rstrip().endswith("pass") and "hidden_one" not in code


def test_declares_cuda_reads_declarations_only():
    assert declares_cuda(TESTS)
    no_cuda = TESTS.replace('device="cuda")\ndef', 'device="cpu")\ndef')
    assert not declares_cuda(no_cuda)  # helper()'s call to case(device="cuda") is no case


def test_the_pack_cuts_hidden_cases_of_both_styles(tmp_path):
    source = TESTS.replace("def helper():\n    case(device=\"cuda\")  # a call, not a "
                           "declaration\n", "")
    kept = public_tests_source(source, tmp_path / "tests.py")
    assert "example_one" in kept and "public_module_style" in kept
    assert "hidden_one" not in kept and "not_literal" not in kept


@pytest.mark.parametrize("folder", BUNDLED, ids=lambda p: p.name)
def test_the_reader_agrees_with_the_imported_suite(folder):
    problem = load_problem(folder, named_by_slug=False)
    source = problem.read("tests.py")
    suite = collect(problem)
    read = read_cases(source)
    assert [(c.name, c.public, c.device, c.category.zh, c.category.en, c.first_line)
            for c in read] == [
        (s.name, s.public, s.device, s.category.zh, s.category.en, s.line)
        for s in suite.cases]
    assert sorted(read_workloads(source)) == sorted(suite.workloads)
    assert problem.uses_cuda == (any(s.device == "cuda" for s in suite.cases)
                                 or any(t.device == "cuda" for t in problem.meta.throughput))
