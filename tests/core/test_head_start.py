"""A worker's head start (judge.sessions.HeadStart): the next judging's runners, started
as a judging ends, judge the next submission of the same problem, and never anything else."""

from __future__ import annotations

import time

from judge.grader import Options, grade
from judge.sessions import HeadStart
from judge.verdict import Verdict

GOOD = "def double(x):\n    return x * 2\n"
WRONG = "def double(x):\n    return x * 3\n"


def _ready(head_start: HeadStart):
    """The runners started ahead, once they are up."""
    head_start.wait()
    assert head_start.next is not None
    sessions = head_start.next.sessions
    assert sessions is not None and set(sessions.current) == {"sub", "ref"}
    return sessions


def _ended(sessions, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(s.alive for s in sessions.all):
            return True
        time.sleep(0.05)
    return False


def test_the_next_judging_of_a_problem_takes_on_the_runners_started_ahead(
        make_problem, launcher):
    problem = make_problem()
    head_start = HeadStart(launcher)
    try:
        first = grade(problem, GOOD, launcher, Options(seed=1), head_start=head_start)
        assert first.verdict is Verdict.ACCEPTED
        ahead = _ready(head_start)
        assert ahead.code == ""  # nothing of a submission yet: a placeholder file
        assert (ahead.jobs["sub"].dir / "submission.py").read_text() == ""
        # The submission written into the runner started ahead is the one judged: a wrong
        # answer is caught there, with its message.
        report = grade(problem, WRONG, launcher, Options(seed=2), head_start=head_start)
        assert report.verdict is Verdict.WRONG_ANSWER
        assert "expected 2, got 3" in report.tests[0].message.en
        assert ahead.code == WRONG
        assert _ended(ahead)  # closed with that judging
        again = _ready(head_start)  # and the one after has its own
        assert again is not ahead
        assert grade(problem, GOOD, launcher, Options(seed=3),
                     head_start=head_start).verdict is Verdict.ACCEPTED
    finally:
        head_start.close()
    assert head_start.next is None


def test_runners_started_for_another_problem_too_long_ago_or_gone_are_not_used(
        make_problem, launcher, monkeypatch):
    one, other = make_problem(), make_problem(slug="double-too", number=8)
    head_start = HeadStart(launcher)
    try:
        head_start.prepare(one, None)
        ahead = _ready(head_start)
        report = grade(other, WRONG, launcher, Options(seed=1), head_start=head_start)
        assert report.verdict is Verdict.WRONG_ANSWER and report.problem == "double-too"
        assert ahead.code == "" and _ended(ahead)  # stopped, never adopted

        ahead = _ready(head_start)  # started for double-too by that judging
        ahead.current["sub"].kill()
        assert grade(other, GOOD, launcher, Options(seed=2),
                     head_start=head_start).verdict is Verdict.ACCEPTED
        assert ahead.code == "" and _ended(ahead)

        monkeypatch.setattr(HeadStart, "MAX_AGE_S", 0.0)
        ahead = _ready(head_start)
        time.sleep(0.01)
        assert grade(other, GOOD, launcher, Options(seed=3),
                     head_start=head_start).verdict is Verdict.ACCEPTED
        assert ahead.code == "" and _ended(ahead)
    finally:
        head_start.close()


def test_a_replay_neither_takes_nor_starts_runners_ahead(make_problem, launcher):
    """A practice pack's replay has no reference runner to start ahead."""
    problem = make_problem()
    head_start = HeadStart(launcher)
    expected = {"example_small": []}
    grade(problem, GOOD, launcher, Options(seed=1, public_only=True, expected=expected),
          head_start=head_start)
    assert head_start.next is None
