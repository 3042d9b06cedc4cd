"""``python practice/judge.py run N --server URL`` against a real ``python -m judge serve``:
its worker grades the run on the public cases only, with no speed check, and nothing is
recorded as a submission."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from tests.web.served import ROOT, serving, stop

pytestmark = pytest.mark.slow

ACCEPTED = ROOT / "problems/padding-collate/submissions/accepted/pad_sequence.py"
SYNTAX_ERROR = ROOT / "problems/padding-collate/submissions/compile_error/syntax.py"


def cli(served, token: str, path, lang: str = "en") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "practice/judge.py", "run", "padding-collate",
                           str(path), "--server", served.url, "--lang", lang], cwd=ROOT,
                          env={**os.environ, "JUDGE_TOKEN": token}, capture_output=True,
                          text=True, timeout=300)


def test_the_cli_runs_the_public_cases_on_the_server(tmp_path):
    with serving(tmp_path) as served, httpx.Client(base_url=served.url, timeout=30) as api:
        assert api.post("/api/users", json={"username": "runner", "password": "password1"}
                        ).status_code == 201
        token = api.post("/api/token", data={"username": "runner", "password": "password1"}
                         ).json()["access_token"]
        auth = {"Authorization": f"Bearer {token}"}

        done = cli(served, token, ACCEPTED)
        assert done.returncode == 0, done.stdout + done.stderr + served.log_tail()
        assert "example run #1: public cases only" in done.stdout
        assert "All public cases pass (this run is not a submission)" in done.stdout
        public = {e["name"] for e in api.get("/api/problems/padding-collate").json()["examples"]}
        run = api.get("/api/runs/1", headers=auth).json()
        assert run["verdict"] == "accepted" and run["kind"] == "run"
        assert {t["name"] for t in run["tests"]} == public  # every public case, nothing else
        assert all(t["visibility"] == "public" for t in run["tests"])
        assert "throughput" not in run

        bad = cli(served, token, SYNTAX_ERROR, "zh")
        assert bad.returncode == 1 and "样例运行 #2" in bad.stdout

        stats = {p["slug"]: p for p in api.get("/api/problems").json()}["padding-collate"]
        assert stats["judged"] == 0  # no submission was recorded
        assert api.get("/api/submissions/1", headers=auth).status_code == 404
    assert stop(served) == 0, served.log_tail()
