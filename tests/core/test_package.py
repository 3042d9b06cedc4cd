"""problem.toml parsing and package loading: typed, frozen, unknown keys rejected."""

from __future__ import annotations

import dataclasses
import re

import pytest

from judge.package import PackageError, find, load_all, load_problem, parse_meta
from tests.conftest import TOML, write_problem

GOOD = TOML.format(slug="double-it", number=7, wall=3.0, memory=2048)


def test_a_good_toml_becomes_frozen_typed_models():
    meta = parse_meta(GOOD)
    assert meta.slug == "double-it" and meta.number == 7
    assert meta.names == ("double",) and meta.tags == ("test",)
    assert meta.limits.case_wall_s == 3.0 and isinstance(meta.limits.memory_mb, int)
    assert meta.requires.cuda is False  # defaults fill what is not given
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.slug = "other"  # type: ignore[misc]


@pytest.mark.parametrize("text, message", [
    ("limts = 3\n" + GOOD, "problem.toml: unknown key 'limts' (allowed: difficulty,"),
    (GOOD + "\nfoo = 1", "limits: unknown key 'foo'"),
    (GOOD + "\n[requires]\ngpu = true", "requires: unknown key 'gpu'"),
    (GOOD + "\n[[throughput]]\nname = 'x'\nworkload = 'w'\nspeed = 2",
     "throughput[0]: unknown key 'speed'"),
])
def test_unknown_keys_are_named(text, message):
    with pytest.raises(PackageError, match=re.escape(message)):
        parse_meta(text)


@pytest.mark.parametrize("old, new, message", [
    ('number = 7', 'number = "7"', "number: expected an integer, got a string"),
    ('difficulty = "easy"', 'difficulty = "trivial"', "'trivial' is not one of"),
    ('names = ["double"]', 'names = "double"', "names: expected an array"),
    ('slug = "double-it"', 'slug = "Double It"', "slug 'Double It'"),
    ('case_wall_s = 3.0', 'case_wall_s = true', "expected a number, got a boolean"),
    ('memory_mb = 2048', 'memory_mb = 64', "memory_mb at least 256"),
    ('names = ["double"]', 'names = ["2x"]', "names must list"),
])
def test_wrong_values_say_what_is_wrong(old, new, message):
    with pytest.raises(PackageError, match=message):
        parse_meta(GOOD.replace(old, new))


def test_missing_required_key_and_bad_toml():
    with pytest.raises(PackageError, match="number: required key is missing"):
        parse_meta(GOOD.replace("number = 7\n", ""))
    with pytest.raises(PackageError, match="not valid TOML"):
        parse_meta("slug = ")


def test_missing_files_are_listed(tmp_path):
    folder = write_problem(tmp_path)
    (folder / "tests.py").unlink()
    (folder / "reference.py").unlink()
    with pytest.raises(PackageError, match=r"missing tests\.py, reference\.py"):
        load_problem(folder)


def test_folder_must_match_slug_and_verdict_folders_must_be_verdicts(tmp_path):
    folder = write_problem(tmp_path)
    renamed = folder.rename(tmp_path / "other-name")
    with pytest.raises(PackageError, match="named after its slug"):
        load_problem(renamed)
    renamed.rename(folder)
    (folder / "submissions" / "wrong").mkdir(parents=True)
    with pytest.raises(PackageError, match="'wrong' is not a verdict"):
        load_problem(folder)


def test_load_all_orders_by_number_and_refuses_duplicates(tmp_path):
    write_problem(tmp_path, slug="bbb-two", number=2)
    write_problem(tmp_path, slug="aaa-one", number=1)
    (tmp_path / "_template").mkdir()  # skipped, as are dot folders
    problems = load_all(tmp_path)
    assert [p.slug for p in problems] == ["aaa-one", "bbb-two"]
    assert find(problems, "2").slug == "bbb-two"
    assert find(problems, "aaa-one").number == 1
    with pytest.raises(PackageError, match="no problem '9'"):
        find(problems, 9)
    write_problem(tmp_path, slug="ccc-dup", number=2)
    with pytest.raises(PackageError, match="share the number 2"):
        load_all(tmp_path)


def test_content_hash_changes_with_content(tmp_path):
    folder = write_problem(tmp_path)
    before = load_problem(folder).content_hash
    assert load_problem(folder).content_hash == before
    (folder / "statement.en.md").write_text("# Double, revised\n")
    assert load_problem(folder).content_hash != before


def test_public_cases_must_come_first(make_problem):
    tests = '''
from judge.testing import case

@case(zh="隐藏", en="hidden")
def hidden_one(t):
    pass

@case(public=True, zh="样例", en="example")
def example_late(t):
    pass
'''
    problem = make_problem(tests=tests)
    with pytest.raises(ValueError, match="put public cases first"):
        problem.tests  # noqa: B018


def test_bundled_problems_load():
    problems = load_all()
    assert [p.slug for p in problems][:1] == ["padding-collate"]
    for p in problems:
        assert p.tests.cases, p.slug


def test_a_solution_is_optional_and_written_in_both_languages(tmp_path):
    folder = write_problem(tmp_path)
    problem = load_problem(folder)
    assert not problem.has_solution and problem.solution("en") is None
    (folder / "solution.en.md").write_text("# Why x * 2\n")
    with pytest.raises(PackageError, match=r"missing solution\.zh\.md \(a solution is "
                                           r"written in both languages"):
        load_problem(folder)
    (folder / "solution.zh.md").write_text("# 为什么是 x * 2\n")
    problem = load_problem(folder)
    assert problem.has_solution
    assert problem.solution("en") == "# Why x * 2\n"
    assert problem.solution("zh") == "# 为什么是 x * 2\n"


def test_the_solution_is_part_of_the_package_version(tmp_path):
    """The content hash (the version a submission records, and what judge.trust compares
    with the bundled packages) covers the solution files: editing one is a new version."""
    folder = write_problem(tmp_path)
    (folder / "solution.zh.md").write_text("思路\n")
    (folder / "solution.en.md").write_text("idea\n")
    before = load_problem(folder).content_hash
    (folder / "solution.en.md").write_text("a better idea\n")
    assert load_problem(folder).content_hash != before


def test_the_bundled_padding_collate_explains_its_reference():
    from tests.conftest import ROOT

    problem = load_problem(ROOT / "problems" / "padding-collate")
    for lang in ("zh", "en"):
        text = problem.solution(lang)
        assert text and "input_ids[attention_mask]" in text and "pad_sequence" in text
