# expect: runtime_error
# what: reads host files: /etc/shadow, /root, the project's problems (reference, tests), /tmp
import os

TARGETS = ["/etc/shadow", "/etc/passwd", "/etc/hostname", "/root/.ssh/id_rsa",
           "/root/.bash_history", "/proc/1/root/etc/shadow", "/run/torch-judge",
           *(f"/tmp/tj-attack-canary-{w}/secret.txt" for w in
             ["main"] + [f"gw{i}" for i in range(8)])]


def project_roots():
    """Where the judge lives on the host, guessed from the sandbox's own mount table."""
    roots = set()
    with open("/proc/self/mountinfo") as f:
        lines = f.readlines()
    for line in lines:
        source = line.split()[3]
        for marker in ("/sandbox", "/.venv"):
            if source.endswith(marker):
                roots.add(source[: -len(marker)])
    return roots


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    found = {}
    targets = list(TARGETS)
    for root in project_roots():
        targets += [f"{root}/problems/padding-collate/reference.py",
                    f"{root}/problems/padding-collate/tests.py", f"{root}/judge/grader.py"]
    for path in targets:
        try:
            with open(path, "rb") as f:
                found[path] = f.read(300)
        except OSError as e:
            found[path] = type(e).__name__
    for top in ("/root", "/work", "/opt"):  # only the parents of the interpreter's binds
        try:
            found[top] = sorted(os.listdir(top))
        except OSError as e:
            found[top] = type(e).__name__
    for top in ("/tmp", "/home", "/var", "/srv", "/run", "/etc", "/job", "/dev/shm"):
        for dirpath, _, files in os.walk(top):
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as f:
                        data = f.read(1 << 16)
                    if b"TJCANARY" in data:
                        found[path] = data[:200]
                except OSError:
                    pass
    raise RuntimeError(f"ATTACK-RAN {found!r}"[:3500])
