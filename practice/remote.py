"""``practice/judge.py submit`` / ``run``: send a file to a judge server (a submission, or a
"Run examples" run: public cases only, no speed check, no record) and print its progress
live.

Standard library only (the practice pack needs nothing but torch). Talks to the server's
JSON API: ``POST /api/token`` (form ``username``, ``password``), ``POST /api/submissions``
``{"problem", "code"}``, ``GET /api/submissions/{id}/events`` (server-sent events, one JSON
object per ``data:`` line with an ``event`` field) and ``GET /api/submissions/{id}``; a run
the same under ``/api/runs``.
"""

from __future__ import annotations

import getpass
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.i18n import T
from judge.package import Problem
from judge.render import case_line, paint, render
from judge.report import Report, TestResult


class ServerError(Exception):
    """The server answered with an error; the message is its explanation."""


def _request(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None,
             method: str | None = None, timeout: float = 30.0):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        return urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        try:
            detail = json.loads(body).get("detail", body)
        except (ValueError, AttributeError):
            detail = body
        raise ServerError(f"{e.code}: {detail}") from None
    except urllib.error.URLError as e:
        raise ServerError(f"cannot reach {url}: {e.reason}") from None


def login(server: str, username: str, password: str) -> str:
    form = urllib.parse.urlencode({"username": username, "password": password}).encode()
    with _request(f"{server}/api/token", data=form,
                  headers={"Content-Type": "application/x-www-form-urlencoded"}) as r:
        return json.load(r)["access_token"]


def create_submission(server: str, token: str, slug: str, code: str,
                      what: str = "submissions") -> int:
    body = json.dumps({"problem": slug, "code": code}).encode()
    with _request(f"{server}/api/{what}", data=body,
                  headers={"Content-Type": "application/json",
                           "Authorization": f"Bearer {token}"}) as r:
        return int(json.load(r)["id"])


def events(server: str, token: str, sid: int,
           what: str = "submissions") -> Iterator[dict[str, Any]]:
    """The submission's (or run's) progress events until the final one."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    with _request(f"{server}/api/{what}/{sid}/events", headers=headers,
                  timeout=600) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line.startswith("data:"):
                continue
            try:
                event = json.loads(line[5:].strip())
            except ValueError:
                continue
            yield event
            if event.get("event") == "done":
                return


def fetch(server: str, token: str, sid: int, lang: str,
          what: str = "submissions") -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    with _request(f"{server}/api/{what}/{sid}?lang={lang}", headers=headers) as r:
        return json.load(r)


def submit(problem: Problem, path: Path, server: str, lang: str,
           username: str | None = None, token: str | None = None, *,
           what: str = "submissions") -> int:
    """Send the file and follow it: a submission, or with ``what="runs"`` a "Run examples"
    run (``practice/judge.py run``). 0 when accepted, 1 when not, 2 on a server error."""
    server = server.rstrip("/")
    try:
        token = token or os.environ.get("JUDGE_TOKEN")
        if not token:
            username = username or os.environ.get("JUDGE_USERNAME") or input(
                T("用户名：", "username: ")(lang))
            password = os.environ.get("JUDGE_PASSWORD") or getpass.getpass(
                T("密码：", "password: ")(lang))
            token = login(server, username, password)
        sid = create_submission(server, token, problem.slug, path.read_text(encoding="utf-8"),
                                what)
        print(paint(_sent(what, sid, server)(lang), "36"))
        live = 0
        for event in events(server, token, sid, what):
            show(event, lang)
            live += event.get("event") == "test"
        final = fetch(server, token, sid, lang, what)
    except ServerError as e:
        print(T(f"服务器返回错误：{e}", f"the server said: {e}")(lang))
        return 2
    if final.get("tests") is not None and final.get("verdict"):
        final = {"seed": 0, "isolation": "", **final}
        # Each case's line was printed as it landed: now the failures' messages and the
        # summary, not every line again.
        print(render(Report.from_json(final), lang, show_hidden_messages=False,
                     case_lines=live == 0))
    if what == "runs" and final.get("verdict") == "accepted":
        print(T("公开用例全部通过（这次运行不算提交）。隐藏用例和速度检查请提交：submit",
                "All public cases pass (this run is not a submission). Submit for the hidden "
                "cases and the speed check: submit")(lang))
    return 0 if final.get("verdict") == "accepted" else 1


def _sent(what: str, sid: int, server: str) -> T:
    if what == "runs":
        return T(f"样例运行 #{sid}：只运行公开用例，不测速度，不算提交",
                 f"example run #{sid}: public cases only, no speed check, not a submission")
    return T(f"已提交 #{sid}：{server}/submissions/{sid}",
             f"submitted #{sid}: {server}/submissions/{sid}")


def show(event: dict[str, Any], lang: str) -> None:
    kind = event.get("event")
    if kind == "queued":
        pos = event.get("position")
        print(T(f"排队中（前面还有 {pos} 个）", f"queued (position {pos})")(lang), flush=True)
    elif kind == "start":
        print(T(f"开始评测：{event.get('total')} 个用例", f"judging: {event.get('total')} cases")(
            lang), flush=True)
    elif kind == "test":
        data = event.get("learner") or event.get("result") or {}
        if data:
            print(case_line(TestResult.from_json(data), lang), flush=True)
