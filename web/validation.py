"""A validate job as the server takes it from a worker: its progress events (the files it
will judge, each file judged) and its result, checked and capped before they are folded
into the version's row (:mod:`web.data.bank`)."""

from __future__ import annotations

from typing import Any

from judge.events import CHECKING, CheckedFile, Event, EventKind, event_from_json, kind_of


def ingest_validation_event(raw: Any) -> Event | None:
    """A validate job's progress event: ``files`` (the files to judge) or ``file`` (one
    judged). Raises ValueError on a malformed one; None for others."""
    if not isinstance(raw, dict):
        raise ValueError("an event must be an object")
    if raw.get("event") == EventKind.START and "files" in raw:
        raw = {**raw, "event": EventKind.FILES}  # a worker from before the kind was renamed
    return event_from_json(raw) if kind_of(raw) in CHECKING else None


def validation_result(raw: dict[str, Any]) -> dict[str, Any]:
    """A validate job's result as stored: ok, errors, warnings, files, skipped, seed (None
    unless the check was given one) and time_s (how long the check took)."""
    if not isinstance(raw.get("ok"), bool):
        raise ValueError("a validation result needs ok: true or false")
    files = raw.get("files", [])
    errors = raw.get("errors", [])
    skipped = raw.get("skipped", [])
    if not all(isinstance(x, list) for x in (files, errors, skipped)):
        raise ValueError("files, errors and skipped must be lists")
    warnings = raw.get("warnings", [])
    if not isinstance(warnings, list):
        raise ValueError("warnings must be a list")
    seed, took = raw.get("seed"), raw.get("time_s")
    # A check without --seed judges each file with a seed of its own (a failing file's
    # explanation names it): no seed for the whole validation, rather than a made-up 0.
    return {"ok": raw["ok"], "errors": [str(e)[:4000] for e in errors[:100]],
            "warnings": [str(w)[:1000] for w in warnings[:100]],
            "files": [CheckedFile.from_json(f).to_json() for f in files[:1000]],
            "skipped": [str(s)[:200] for s in skipped[:1000]],
            "seed": int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None,
            "time_s": float(took) if isinstance(took, int | float) else None}
