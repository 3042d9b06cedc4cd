"""Hostile submissions, judged for real: each gets its clean, non-accepted verdict within its
time bound, and leaves nothing behind — no secret in what the judge reports, nothing
written outside, no process running, no mount or cgroup left.

Each file in ``submissions/`` defines padding-collate's ``collate`` and says what it
expects in its header::

    # expect: runtime_error            (or several: runtime_error|wrong_answer)
    # what: one line on what it tries
    # within: 40                       (seconds; default 60: a hang would take 120)
    # throughput: yes                  (optional: every case and the speed check)
    # shown: text                      (optional: the report must say this)
    # not-shown: {root}|{prefix}       (optional: nor these; {root} is the project folder,
                                       {prefix} and {base} the interpreter's sys.prefix and
                                       sys.base_prefix)
    # not-shown-re: line [0-9]{5}      (optional: nor anything this regular expression finds)

Every report must also be valid Unicode (it is printed and posted as UTF-8) and small.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from judge.grader import Options, grade
from judge.package import load_problem
from judge.render import render
from judge.verdict import Verdict
from tests.sandbox.helpers import ROOT, job_mounts, leftovers, processes_of

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ATTACKS = sorted((HERE / "submissions").glob("*.py"))
PROBLEM = ROOT / "problems" / "padding-collate"
# A public case (its output and messages are shown in full) and a hidden one.
CASES = ("example_basic", "random_right")
# Text only the reference solution holds: it must never reach a submission's report.
REFERENCE_MARKER = "Boolean assignment fills the True positions"
MAX_REPORT_CHARS = 1_000_000


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(":")
        fields[key.strip()] = value.strip()
    return fields


def test_there_are_enough_attacks():
    assert len(ATTACKS) >= 20
    for path in ATTACKS:
        fields = header(path)
        assert "expect" in fields and "what" in fields, path.name
        for verdict in fields["expect"].split("|"):
            assert Verdict(verdict) is not Verdict.ACCEPTED, path.name


@pytest.mark.parametrize("path", ATTACKS, ids=lambda p: p.stem)
def test_attack_is_contained(path, attack_launcher, canaries, code_hashes, tmp_path):
    fields = header(path)
    expected = {Verdict(v) for v in fields["expect"].split("|")}
    within = float(fields.get("within", 60))
    problem = load_problem(PROBLEM)
    before = processes_of(attack_launcher.uid)

    started = time.monotonic()
    options = (Options(jobs_root=tmp_path) if fields.get("throughput") == "yes"
               else Options(cases=CASES, throughput=False, jobs_root=tmp_path))
    report = grade(problem, path.read_text(), attack_launcher, options)
    took = time.monotonic() - started

    shown = json.dumps(report.to_json("en"), ensure_ascii=False)
    assert report.verdict in expected, f"{report.verdict}: {report.message.en}"
    assert took < within, f"took {took:.1f} s"
    assert report.isolation == "bwrap"
    # What the CLI prints and the worker posts: valid UTF-8, of a sensible size.
    for lang in ("en", "zh"):
        assert len(render(report, lang).encode("utf-8")) < MAX_REPORT_CHARS
        json.dumps(report.to_json(lang), ensure_ascii=False).encode("utf-8")
    assert len(shown) < MAX_REPORT_CHARS, f"a report of {len(shown)} characters"
    if "shown" in fields:
        assert fields["shown"] in shown, report.message.en
    if "not-shown" in fields:
        for text in fields["not-shown"].split("|"):
            text = text.format(root=ROOT, prefix=sys.prefix, base=sys.base_prefix)
            assert text not in shown, f"{text} shown: {report.message.en}"
    if "not-shown-re" in fields:
        assert not re.search(fields["not-shown-re"], shown), report.message.en
    # Nothing leaked: not the worker's environment, not a host file, not the reference.
    for secret in canaries.secrets():
        assert secret not in shown
    assert REFERENCE_MARKER not in shown
    # Nothing written outside, nothing changed, nothing reached over the network.
    assert list(canaries.out_dir.iterdir()) == []
    assert canaries.victim.read_text() == canaries.victim_text
    assert code_hashes() == canaries.code_hashes
    assert canaries.connections == []
    # Nothing left running, mounted or grouped.
    assert not leftovers(attack_launcher, before), "a process of the job survived it"
    assert attack_launcher.jobdirs is not None
    attack_launcher.jobdirs.collect()
    assert not [m for m in job_mounts() if m.startswith(str(tmp_path))]
    assert list(tmp_path.iterdir()) == []
    h = attack_launcher.hierarchy
    if h is not None:
        mine = f"{os.getpid()}-{attack_launcher.slot}-"
        assert not [g.name for g in h.memory.iterdir() if g.name.startswith(mine)]
    # And the judge still works: the warm template survived.
    assert attack_launcher.template is None or attack_launcher.template.alive
    if "ATTACK-RAN" in path.read_text() and Verdict.RUNTIME_ERROR in expected:
        assert "ATTACK-RAN" in shown  # it did run, and found nothing it should not have
