# expect: wrong_answer|time_limit_exceeded
# what: DataLoader workers (fork, then spawn) try to write outside: /, /usr, the judge, host /tmp
# within: 60
import os

from torch.utils.data import DataLoader, Dataset

WORKERS = ["main"] + [f"gw{i}" for i in range(8)]
TARGETS = ("/tj-pwned", "/usr/tj-pwned", "/etc/tj-pwned", "/root/tj-pwned",
           "/opt/torch-judge/sandbox/runner.py", "/opt/torch-judge/sandbox/tj-pwned",
           *(f"/tmp/tj-attack-out-{w}/pwned" for w in WORKERS),
           "/jobs/tj-pwned", "/run/torch-judge/pwned", "/dev/tj-pwned", "/proc/self/oom_score_adj")


class Writer(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        results = {}
        for path in TARGETS:
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
        return results


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    found = []
    for method in ("fork", "spawn"):
        loader = DataLoader(Writer(), batch_size=None, num_workers=2,
                            multiprocessing_context=method)
        found += [sorted(r.items()) for r in loader]
    print("ATTACK-RAN", found)
    return None
