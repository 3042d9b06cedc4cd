"""Smoke test against a real ``python -m judge serve`` process: an account, a submission of
padding-collate judged by a local worker with its progress streamed, the practice CLI's
``submit`` against the same server, the practice pack, and a clean shutdown."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import httpx
import pytest

from tests.web.served import ROOT, read_events, serving, stop

pytestmark = pytest.mark.slow

ACCEPTED = ROOT / "problems/padding-collate/submissions/accepted/pad_sequence.py"
SYNTAX_ERROR = ROOT / "problems/padding-collate/submissions/compile_error/syntax.py"


def test_serve_judges_padding_collate_end_to_end(tmp_path):
    with serving(tmp_path) as served, httpx.Client(base_url=served.url, timeout=30) as api:
        assert api.get("/").status_code == 200
        assert api.post("/api/users", json={"username": "smoke", "password": "password1"}
                        ).status_code == 201
        token = api.post("/api/token", data={"username": "smoke", "password": "password1"}
                         ).json()["access_token"]
        auth = {"Authorization": f"Bearer {token}"}
        r = api.post("/api/submissions", headers=auth,
                     json={"problem": "padding-collate", "code": ACCEPTED.read_text()})
        assert r.status_code == 202, r.text
        sid = r.json()["id"]

        events = read_events(f"{served.url}/api/submissions/{sid}/events", auth)
        kinds = [e["event"] for e in events]
        assert "start" in kinds and kinds[-1] == "done", served.log_tail()
        start = events[kinds.index("start")]
        tests = [e for e in events if e["event"] == "test"]
        assert len(tests) == start["total"] >= 10
        assert [e["index"] for e in tests] == list(range(start["total"]))
        assert events[-1]["verdict"] == "accepted", served.log_tail()

        final = api.get(f"/api/submissions/{sid}", headers=auth).json()
        assert final["status"] == "done" and final["verdict"] == "accepted"
        assert final["passed"] == final["total"] == start["total"]

        # the practice CLI's submit verb is a client of the same API
        env = {**os.environ, "JUDGE_TOKEN": token}
        cli = subprocess.run([sys.executable, "practice/judge.py", "submit", "1",
                              str(SYNTAX_ERROR), "--server", served.url, "--lang", "en"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert "submitted #" in cli.stdout and "Compile error" in cli.stdout

        pack = api.get("/practice-pack.zip", timeout=300)
        assert pack.status_code == 200, pack.text
        names = zipfile.ZipFile(io.BytesIO(pack.content)).namelist()
        assert "torch-judge-practice/practice/judge.py" in names
        assert "torch-judge-practice/problems/padding-collate/tests.py" in names
        assert not [n for n in names if n.endswith("reference.py") or "/submissions/" in n]

    assert stop(served) == 0, served.log_tail()
    log = served.log.read_text()
    # a job given back is trouble, except a leaderboard timing making way for live work or
    # a job the worker was on when the server stopped (it gives it back for the next start)
    lines = log.splitlines()
    excused = ("giving the rank job back", "stopping while job")
    trouble = [line for i, line in enumerate(lines) if "released job" in line
               and not (i and any(why in lines[i - 1] for why in excused))]
    assert not trouble and "Traceback" not in log, served.log_tail()
    assert log.count("giving the rank job back") <= 2, "a rank job kept giving way"
