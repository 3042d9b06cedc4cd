"""A hostile package's tests: at import and inside a case they try what a package's code
must never manage from the worker — write files outside the judging, read the worker's
token and another problem's files, reach the network — and report whatever succeeded in
the public case's notes (tests/attacks/test_hostile_package.py reads them, and checks from
outside: whether a file was written is seen on the host). ``targets.json``, written by
the test beside this file, names the host's paths and ports to try."""

import json
import os
import socket
from pathlib import Path

import torch

from judge.testing import case

HERE = Path(__file__).resolve().parent
TARGETS = json.loads((HERE / "targets.json").read_text())


def attempt(stage):
    """What a hostile package tries; a line for everything that worked."""
    done = []
    for path in [*TARGETS.get("write", []), str(HERE / "written-{stage}.txt")]:
        path = path.format(stage=stage)
        try:
            with open(path, "w") as f:
                f.write("a hostile package was here")
            # Not PWNED by itself: a box has a /tmp of its own. The test looks on the host.
            done.append(f"wrote {path}")
        except OSError:
            pass
    for path in TARGETS.get("read", []):
        try:
            done.append(f"PWNED read {path}: {Path(path).read_text()[:300]}")
        except OSError:
            pass
    for key, value in os.environ.items():
        if key.startswith("JUDGE_") or "TJCANARY" in value:
            done.append(f"PWNED env {key}={value}")
    for port in TARGETS.get("ports", []):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"hostile package, {stage}".encode())
            done.append(f"PWNED connected to {port}")
        except OSError:
            pass
    return done


AT_IMPORT = attempt("import")


@case(public=True, zh="样例", en="example")
def example_small(t):
    for line in AT_IMPORT + attempt("case"):
        t.note(line, line)
    x = torch.tensor([1, 2, 3])
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")


@case(zh="数据文件", en="a data file")
def from_a_file(t):
    with t.data_file(str(t.random.randrange(100)).encode(), suffix=".txt") as name:
        t.expect_equal(t.sub.scenario("read_number", name), t.ref.scenario("read_number", name),
                       "read_number(name)")


@case(zh="随机", en="random")
def random_values(t):
    x = torch.randint(0, 100, (8,), generator=t.rng)
    t.expect_equal(t.sub.double(x), t.ref.double(x), "double(x)")
