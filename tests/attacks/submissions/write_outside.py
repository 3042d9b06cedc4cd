# expect: wrong_answer
# what: tries to write outside its folders: /, /usr, /etc, the judge's code, host /tmp, /proc
import os

WORKERS = ["main"] + [f"gw{i}" for i in range(8)]


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    results = {}
    for path in ("/tj-pwned", "/usr/tj-pwned", "/etc/tj-pwned", "/root/tj-pwned",
                 "/opt/torch-judge/sandbox/runner.py", "/opt/torch-judge/sandbox/tj-pwned",
                 *(f"/tmp/tj-attack-out-{w}/pwned" for w in WORKERS),
                 "/proc/sys/kernel/hostname", "/proc/self/oom_score_adj", "/dev/tj-pwned",
                 "/run/torch-judge/pwned"):
        try:
            with open(path, "a") as f:
                f.write("-1000" if "oom" in path else "TJ-PWNED\n")
            results[path] = "written"
        except OSError as e:
            results[path] = type(e).__name__
    for path in ("/", "/job", "/opt/torch-judge/sandbox"):
        try:
            os.chmod(path, 0o777)
            results[f"chmod {path}"] = "done"
        except OSError as e:
            results[f"chmod {path}"] = type(e).__name__
    print("ATTACK-RAN", results)
    return None
