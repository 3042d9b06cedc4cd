"""A hostile package, judged for real: its tests.py (``packages/hostile-double``) tries at
import and inside a case to write files outside its judging, read the worker's token (from
the environment and from the data folder's file), open a socket to a listener on the host's
loopback, and read another problem's reference. Graded as the worker grades a submission,
and validated as the worker validates a version, it must achieve none of it — seen from
outside (no file, no connection, no secret or other problem's code in what the judge
reports) and from inside (it reports each success as a ``PWNED`` note) — while its verdicts
stay those of a sound package. Also: an honest copy of a bundled problem, untrusted since it
is not byte for byte the bundled one, still judges right through its grader box, speed
check included; and its part of the practice pack is made in its box too.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from judge.case_reader import read_cases
from judge.check import check_problem
from judge.expected import decode_recording
from judge.grader import Options, grade
from judge.pack import public_parts
from judge.package import load_problem
from judge.trust import is_bundled, runs_confined
from judge.verdict import Verdict
from tests.attacks.conftest import CANARY_DIR, OUT_DIR, PORTS, WORKER
from tests.sandbox.helpers import ROOT

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

HOSTILE = Path(__file__).resolve().parent / "packages" / "hostile-double"
OTHER_REFERENCE = ROOT / "problems" / "padding-collate" / "reference.py"
REFERENCE_MARKER = "Boolean assignment fills the True positions"  # only in OTHER_REFERENCE
DATA_DIR = Path(f"/tmp/tj-hostile-data-{WORKER}")  # a server's data folder, its token inside
WRITES = [f"/tmp/tj-hostile-{WORKER}-{{stage}}.txt", f"/root/tj-hostile-{WORKER}-{{stage}}.txt",
          f"{OUT_DIR}/hostile-{{stage}}.txt"]


@pytest.fixture
def hostile(tmp_path, canaries):
    """The package, copied, with the host's targets beside its tests; the token file."""
    DATA_DIR.mkdir(exist_ok=True)
    os.chmod(DATA_DIR, 0o755)  # as open as can be: only the box keeps the package out
    token = DATA_DIR / "worker_token"
    token.write_text(f"TJCANARY-token-{canaries.env_secret}")
    os.chmod(token, 0o644)
    folder = tmp_path / "hostile-double"
    shutil.copytree(HOSTILE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "targets.json").write_text(json.dumps({
        "write": WRITES, "ports": list(PORTS),
        "read": [str(token), str(CANARY_DIR / "secret.txt"), str(OTHER_REFERENCE)]}))
    problem = load_problem(folder)
    before = len(canaries.connections)
    yield problem
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    for pattern in WRITES:
        for stage in ("import", "case"):
            Path(pattern.format(stage=stage)).unlink(missing_ok=True)
    assert len(canaries.connections) == before, canaries.connections[before:]


def achieved_nothing(problem, canaries, *reports) -> None:
    """Nothing written, nothing leaked, nothing imported into this process."""
    for pattern in WRITES:
        for stage in ("import", "case"):
            assert not Path(pattern.format(stage=stage)).exists(), pattern.format(stage=stage)
    assert sorted(p.name for p in problem.dir.iterdir()) == sorted(
        [*(p.name for p in HOSTILE.iterdir() if p.name != "__pycache__"), "targets.json"])
    text = json.dumps([r.to_json("en") for r in reports], ensure_ascii=False)
    for secret in (*canaries.secrets(), REFERENCE_MARKER, "PWNED"):
        assert secret not in text
    assert not any(name.startswith("judge_problem_hostile_double") for name in sys.modules)


def test_judging_a_submission_reaches_nothing(hostile, canaries, attack_launcher):
    assert not is_bundled(hostile) and runs_confined(hostile, attack_launcher.isolation)
    events = []
    report = grade(hostile, hostile.read("reference.py"), attack_launcher, Options(),
                   on_progress=events.append)
    assert report.verdict is Verdict.ACCEPTED, report.detail.en or report.message.en
    assert [t.name for t in report.tests] == ["example_small", "from_a_file", "random_values"]
    assert report.isolation == "bwrap" and report.problem_version == hostile.content_hash[:12]
    # The events the box sent came through, checked, and ended with the worker's own Done.
    assert [type(e).__name__ for e in events][:2] == ["Started", "Running"]
    assert type(events[-1]).__name__ == "Done" and events[-1].passed == 3
    wrong = grade(hostile, hostile.read("submissions/wrong_answer/plus_two.py"),
                  attack_launcher, Options())
    assert wrong.verdict is Verdict.WRONG_ANSWER
    achieved_nothing(hostile, canaries, report, wrong)


def test_validating_the_version_reaches_nothing(hostile, canaries, attack_launcher):
    # What the worker runs for a validate job (judge/worker.py: Worker.validate).
    result = check_problem(hostile, attack_launcher, workers=1, cuda=False)
    assert result.ok, result.problems()
    assert [o.label for o in result.outcomes] == [
        "reference", "starter", "submissions/wrong_answer/plus_two.py"]
    achieved_nothing(hostile, canaries, *(o.report for o in result.outcomes))


def test_an_honest_copy_of_a_bundled_problem_judges_right(tmp_path, attack_launcher,
                                                          monkeypatch):
    import judge.broker

    asked: list = []
    answer = judge.broker.Broker.answer
    monkeypatch.setattr(judge.broker.Broker, "answer",
                        lambda self, op, m: asked.append(op) or answer(self, op, m))
    folder = tmp_path / "padding-collate"
    shutil.copytree(ROOT / "problems" / "padding-collate", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text().replace('version = "1"', 'version = "1-uploaded"'))
    problem = load_problem(folder)
    assert runs_confined(problem, attack_launcher.isolation)
    report = grade(problem, problem.read("reference.py"), attack_launcher, Options())
    assert report.verdict is Verdict.ACCEPTED, report.detail.en or report.message.en
    assert report.throughput and report.throughput[0].ratio is not None
    assert 0.6 < report.throughput[0].ratio < 1.6
    # The box measured under the machine's throughput lock, taken for it by the worker
    # (judge.boxed replaces judge.throughput.measuring_alone: keep that name).
    assert asked.count("lock") == asked.count("unlock") >= 1
    bug = sorted((folder / "submissions" / "wrong_answer").glob("*.py"))[0]
    wrong = grade(problem, bug.read_text(), attack_launcher, Options(throughput=False))
    assert wrong.verdict is Verdict.WRONG_ANSWER
    assert not any(name.startswith("judge_problem_padding_collate") and
                   problem.content_hash[:12] in name for name in sys.modules)


def test_its_practice_pack_part_is_made_in_its_box(hostile, canaries, attack_launcher):
    # What `python -m judge pack` (the web's practice pack builder) does for each problem.
    public, expected = public_parts(hostile, attack_launcher)
    assert [c.name for c in read_cases(public)] == ["example_small"]
    assert list(decode_recording(expected)) == ["example_small"]
    achieved_nothing(hostile, canaries)


MISBEHAVING = {
    # what tests.py does at import: what the worker must say
    "exits": ("import os\nos._exit(3)\n", "ended without a report"),
    "garbles_the_link": ("import os, sys\nos.write(int(sys.argv[sys.argv.index('--fd') + 1]),"
                         " b'\\xff' * 64)\nimport time\ntime.sleep(120)\n", "link"),
    "hangs": ("import time\ntime.sleep(600)\n", "took longer than"),
    "floods_its_output": ("import sys\nfor _ in range(4096):\n    sys.stdout.write('x' * 1024)"
                          "\nsys.stdout.flush()\nimport time\ntime.sleep(120)\n",
                          "printed too much"),
}


@pytest.mark.parametrize("name", sorted(MISBEHAVING))
def test_a_box_that_misbehaves_is_the_packages_internal_error(name, tmp_path, attack_launcher,
                                                              monkeypatch):
    import judge.graderbox
    from tests.conftest import TESTS, write_problem

    prelude, said = MISBEHAVING[name]
    problem = load_problem(write_problem(tmp_path, tests=prelude + TESTS))
    if name == "hangs":  # a wall clock that a loaded machine still starts a box within
        limits = judge.graderbox.box_limits(problem)
        monkeypatch.setattr(judge.graderbox, "box_limits",
                            lambda p: dataclasses.replace(limits, lifetime_s=25.0))
    report = grade(problem, problem.read("reference.py"), attack_launcher, Options())
    assert report.verdict is Verdict.INTERNAL_ERROR
    assert "not your code's fault" in report.message.en
    assert said in report.detail.en, report.detail.en
    assert report.seed and report.problem == problem.slug and report.isolation == "bwrap"
