"""judge.events: the progress events between grader, worker, server and reader, typed;
their JSON round-trips, the learner's view hides what it must, and web/README.md's event
tables list exactly the kinds there are, with their fields."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judge.events import (
    CheckedFile,
    Done,
    EventKind,
    FileChecked,
    FilesPlanned,
    Phase,
    PlannedTest,
    Queued,
    Running,
    Started,
    TestJudged,
    ThroughputMeasured,
    event_from_json,
)
from judge.i18n import T
from judge.report import KindTime, SkipReason, TestResult, ThroughputResult
from judge.verdict import Verdict

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = TestResult("big", "hidden", T("大数", "large"), Verdict.WRONG_ANSWER,
                    T("期望 1，得到 2", "expected 1, got 2"), 3.0, "printed", T("秘密", "secret"))
EXAMPLES = [
    Queued(2), Started(2, (PlannedTest("a", "public"), PlannedTest("big", "hidden")), seed=7),
    Running("a", 0), Running("throughput:epoch"), Phase("waiting_for_quiet_machine"),
    Phase("measuring"), Phase("ranking"), TestJudged(1, HIDDEN),
    TestJudged(0, TestResult("cuda", "public", T("类", "cat"), Verdict.SKIPPED,
                             skip=SkipReason.NEEDS_CUDA)),
    ThroughputMeasured(ThroughputResult("epoch", "cpu", Verdict.ACCEPTED, 0.5, 1.02, "2.3",
                                        0.01, 9, 1, 1.5, 1.4, T("一轮", "one epoch"))),
    ThroughputMeasured(ThroughputResult("gpu", "cuda", Verdict.SKIPPED, 0.5)),
    ThroughputMeasured(ThroughputResult(
        "batch", "cpu", Verdict.TOO_SLOW, 0.25, 0.2, "2.3", 0.05, 12, 2, 4.0, 0.8,
        interval=(0.18, 0.22), pair_ratios=(0.19, 0.2, 0.21), refined=True,
        kinds=(KindTime("left", 4.1, 0.8), KindTime("right", 3.9, 0.8)))),
    Done(Verdict.WRONG_ANSWER, 1, 2, 0.9, T("错", "wrong")),
    FilesPlanned((CheckedFile("reference", "accepted"),)),
    FileChecked(CheckedFile("starter", "not accepted", Verdict.WRONG_ANSWER, True, "")),
]


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_every_event_round_trips_its_json(event):
    data = event.to_json("en")
    assert data["event"] == event.kind
    again = event_from_json(data)
    if isinstance(event, Done):  # the message travels in one language
        assert again == Done(event.verdict, event.passed, event.total, event.ratio,
                             T.same(event.message.en))
    else:
        assert again == event


def test_every_kind_has_an_example():
    assert {e.kind for e in EXAMPLES} == set(EventKind)


def test_the_learner_view_has_no_seed_and_no_hidden_message():
    start = EXAMPLES[1].to_json("zh", learner=True)
    assert "seed" not in start and EXAMPLES[1].to_json("zh")["seed"] == 7
    view = TestJudged(1, HIDDEN).to_json("en", learner=True)
    assert view["result"]["message"] == "" and "output" not in view["result"]
    assert "secret" not in str(view) and "expected 1" not in str(view)
    assert "secret" in str(TestJudged(1, HIDDEN).to_json("en"))  # admins' full view


@pytest.mark.parametrize("bad", [
    [], {"event": "test", "index": 0}, {"event": "nope"},
    {"event": "start", "tests": [{"name": "a", "visibility": "secret"}]},
    {"event": "throughput", "result": {"name": "x"}}, {"event": "file", "file": "text"},
    {"event": "files", "files": "not a list"}, {"event": "phase", "phase": "napping"},
    {"event": "phase"},
    {"event": "throughput", "result": {"name": "x", "verdict": "accepted", "min_ratio": 1,
                                       "ratio": 1.0, "interval": [1.0]}},
])
def test_malformed_events_are_refused(bad):
    with pytest.raises((KeyError, TypeError, ValueError)):
        event_from_json(bad)


def test_a_phase_reads_the_same_for_learners_and_admins():
    for phase in ("waiting_for_quiet_machine", "measuring", "ranking"):
        event = Phase(phase)
        assert event.to_json("zh", learner=True) == event.to_json("en") == {
            "event": "phase", "phase": phase}


def test_a_throughput_result_stored_before_intervals_still_loads():
    old = {"name": "b", "device": "cpu", "torch": "2.3", "ratio": 1.01, "spread": 0.1,
           "min_ratio": 0.25, "pairs": 200, "rounds": 1, "sub_ms": 2.5, "ref_ms": 2.5,
           "verdict": "accepted"}
    result = ThroughputResult.from_json(old)
    assert (result.interval, result.pair_ratios, result.kinds, result.refined) == (
        None, (), (), False)
    again = result.to_json()
    assert again["interval"] is None and again["pair_ratios"] == [] and not again["refined"]
    assert ThroughputResult.from_json(again) == result


def test_the_measured_keys_the_web_reads_are_there():
    (event,) = [e for e in EXAMPLES if isinstance(e, ThroughputMeasured) and e.result.refined]
    data = event.to_json("en", learner=True)["result"]
    assert data["interval"] == [0.18, 0.22] and data["pair_ratios"] == [0.19, 0.2, 0.21]
    assert data["kinds"] == [{"kind": "left", "sub_ms": 4.1, "ref_ms": 0.8},
                             {"kind": "right", "sub_ms": 3.9, "ref_ms": 0.8}]
    assert data["refined"] is True


def readme_event_tables() -> dict[str, set[str]]:
    """kind -> fields, from every table in web/README.md headed ``| `event` | fields |``."""
    rows: dict[str, set[str]] = {}
    in_table = False
    for line in (ROOT / "web" / "README.md").read_text().splitlines():
        if line.startswith("| `event` | fields |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        cells = [c.strip() for c in line.strip("|").split("|")]
        if in_table and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[1]))
    return rows


def test_the_readme_event_tables_match_the_events():
    """Each kind's row names the fields readers get (the learner's view, as streamed)."""
    tables = readme_event_tables()
    assert set(tables) == {str(k) for k in EventKind}
    fields: dict[str, set[str]] = {}
    for event in EXAMPLES:
        fields.setdefault(event.kind, set()).update(event.to_json("zh", learner=True))
    assert tables == {kind: names - {"event"} for kind, names in fields.items()}
