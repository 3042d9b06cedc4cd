# expect: runtime_error
# what: hunts for the reference solution, which runs in a sandbox next to it
import os
import socket


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    found = []
    # (/opt/python and /opt/venv hold the interpreter and its packages: thousands of files)
    for top in ("/jobs", "/job", "/tmp", "/dev/shm", "/run", "/opt/torch-judge"):
        for dirpath, _, files in os.walk(top):
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as f:
                        data = f.read(1 << 16)
                    if b"def collate" in data and path != "/job/submission.py":
                        found.append((path, data[:400]))
                except OSError:
                    pass
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append((pid, os.readlink(f"/proc/{pid}/cwd"), os.listdir(f"/proc/{pid}/cwd")))
            except OSError:
                pass
    for name in ("\0tj-ref", "\0runner"):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(name)
            found.append(("socket", name))
        except OSError:
            pass
    raise RuntimeError(f"ATTACK-RAN {found!r}"[:3500])
