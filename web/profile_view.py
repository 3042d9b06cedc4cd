"""A learner's profile (``/users/NAME`` and ``GET /api/users/NAME``): the problems they
solved with their best speed ratio, the ones they tried, and their activity, submissions
per day over the recent weeks, drawn as a small grid (an SVG the page draws itself: no
script, no library).

The profile is public, like the leaderboard: it shows names, counts, verdicts and speed
ratios, never code. A disabled account's profile is shown to admins only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from judge.i18n import T
from web.catalog import Catalog
from web.data import accounts, profiles
from web.errors import NotFound
from web.models import User

WEEKS = 12
CELL, GAP = 11, 3  # pixels of a day's square and the space between squares
# (at most this many submissions that day, fill opacity); above the last: full colour
LEVELS = ((0, 0.08), (2, 0.35), (5, 0.6), (9, 0.8))


def no_such_user(name: str) -> NotFound:
    return NotFound(T(f"没有叫 {name} 的用户", f"there is no user named {name}"))


def visible_user(db: Session, name: str, viewer: User | None) -> User:
    """The account named ``name`` (any case), or NotFound; a disabled one only for admins."""
    user = accounts.user_by_name(db, name.strip())
    if user is None or (user.disabled and not (viewer and viewer.is_admin)):
        raise no_such_user(name)
    return user


@dataclass(frozen=True)
class Day:
    day: date
    count: int
    x: int
    y: int
    opacity: float


@dataclass(frozen=True)
class Activity:
    days: list[Day]
    first: date
    last: date

    @property
    def total(self) -> int:
        return sum(d.count for d in self.days)

    @property
    def active_days(self) -> list[Day]:
        return [d for d in self.days if d.count]

    @property
    def width(self) -> int:
        return WEEKS * (CELL + GAP)

    @property
    def height(self) -> int:
        return 7 * (CELL + GAP)


def first_day(today: date) -> date:
    """The Monday WEEKS - 1 weeks before this week's."""
    return today - timedelta(days=today.weekday() + 7 * (WEEKS - 1))


def activity(counts: dict[date, int], today: date) -> Activity:
    """The last WEEKS weeks up to ``today``, a column per week (Monday on top)."""
    first = first_day(today)
    days = []
    for i in range((today - first).days + 1):
        day = first + timedelta(days=i)
        n = counts.get(day, 0)
        opacity = next((o for top, o in LEVELS if n <= top), 1.0)
        days.append(Day(day, n, (i // 7) * (CELL + GAP), day.weekday() * (CELL + GAP),
                        opacity))
    return Activity(days, first, today)


@dataclass(frozen=True)
class Profile:
    user: User
    solved: list[dict[str, Any]]  # {"slug", "p" (ProblemView or None), "first_at", ...}
    tried: list[dict[str, Any]]  # {"slug", "p", "submissions"}: tried, never accepted
    activity: Activity
    submissions: int

    def to_json(self) -> dict[str, Any]:
        def stamp(value: datetime | None) -> str | None:
            return value.isoformat() + "Z" if value else None

        return {
            "username": self.user.username, "joined": stamp(self.user.created_at),
            "submissions": self.submissions,
            "solved": [{"problem": s["slug"], "first_solved_at": stamp(s["first_at"]),
                        "best_ratio": s["best_ratio"], "accepted": s["accepted"],
                        "submissions": s["submissions"]} for s in self.solved],
            "tried": [{"problem": t["slug"], "submissions": t["submissions"]}
                      for t in self.tried],
            "activity": {"from": self.activity.first.isoformat(),
                         "to": self.activity.last.isoformat(),
                         "per_day": {d.day.isoformat(): d.count
                                     for d in self.activity.active_days}},
        }


def build(db: Session, user: User, catalog: Catalog, now: datetime) -> Profile:
    """The profile of ``user``. Only published problems are listed (a problem taken off
    the site is not named on a public page); the submission count covers them all."""
    done = [s for s in profiles.solved(db, user.id) if catalog.get(s.problem)]
    tries = profiles.attempts(db, user.id)
    solved_slugs = {s.problem for s in done}
    solved = [{"slug": s.problem, "p": catalog.get(s.problem), "first_at": s.first_at,
               "best_ratio": s.best_ratio, "accepted": s.accepted,
               "submissions": tries.get(s.problem, s.accepted)} for s in done]
    tried = [{"slug": slug, "p": catalog.get(slug), "submissions": n}
             for slug, n in sorted(tries.items())
             if slug not in solved_slugs and catalog.get(slug)]
    since = datetime.combine(first_day(now.date()), datetime.min.time())
    counts = profiles.activity(db, user.id, since)
    return Profile(user, solved, tried, activity(counts, now.date()), sum(tries.values()))
