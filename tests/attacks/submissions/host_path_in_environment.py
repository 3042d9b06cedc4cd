# expect: runtime_error
# what: looks for the host's folders in its environment, cwd, sys, sysconfig and mount tables
# shown: unexpected=[]
# not-shown: {root}|{prefix}|{base}|/run/torch-judge

# The warm template was started in the worker's folder: bubblewrap kept it and set
# PWD=<that folder> in every job's environment. sys.prefix was the project's virtualenv,
# and /proc/self/mountinfo (and the init's, /proc/1/mountinfo) named the interpreter under
# /root, the worker's pid and its store of job folders: a bind mount shows the path of its
# source within its file system.

import os
import re
import sys
import sysconfig

# What a sandbox may show: its own folders, the system's, and the names of its mounts.
# (Device nodes and /proc/bus, /proc/irq appear as the roots of their mounts.)
NEUTRAL = re.compile(r"^/(usr|opt/python|opt/venv|opt/torch-judge|proc|dev|tmp|job|jobs|"
                     r"etc/ld\.so\.cache|etc/zoneinfo|newroot|file-[0-9a-f]+|opt-[a-z-]+|"
                     r"sys|bin|lib|lib64|sbin|null|zero|full|random|urandom|tty|bus|irq)?"
                     r"(/|$)")


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return f"<{e.strerror}>"


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    seen = {
        "sys": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable,
                getattr(sys, "_base_executable", ""), *sys.path],
        "sysconfig": [str(v) for v in sysconfig.get_config_vars().values()],
        "paths": list(sysconfig.get_paths().values()),
        "env": [f"{k}={v}" for k, v in os.environ.items()],
        "cwd": [os.getcwd()],
        "mountinfo": _read("/proc/self/mountinfo").split(),
        "init-mountinfo": _read("/proc/1/mountinfo").split(),
        "maps": _read("/proc/self/maps").split(),
    }
    unexpected = set()
    for where, words in seen.items():
        for word in words:
            for path in re.findall(r"(?<![\w.])/[\w.@+-][\w./@+-]*", word):
                if not NEUTRAL.match(path):
                    unexpected.add(f"{where}:{path}")
    shown = {k: seen[k] for k in ("sys", "cwd")}
    raise RuntimeError(f"ATTACK-RAN unexpected={sorted(unexpected)!r} {shown!r}"[:3900])
