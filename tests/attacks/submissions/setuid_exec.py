# expect: runtime_error
# what: runs setuid programs and looks for a way to root
import subprocess


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    out = {}
    for argv in (["/usr/bin/id"], ["/usr/bin/su", "-c", "id"], ["/usr/bin/sudo", "-n", "id"],
                 ["/usr/bin/passwd", "--status"], ["/usr/bin/mount"], ["/usr/bin/newgrp"]):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=5,
                                  stdin=subprocess.DEVNULL)
            out[argv[0]] = (done.returncode, done.stdout[-200:], done.stderr[-200:])
        except (OSError, subprocess.SubprocessError) as e:
            out[argv[0]] = type(e).__name__
    raise RuntimeError(f"ATTACK-RAN {out!r}"[:3500])
