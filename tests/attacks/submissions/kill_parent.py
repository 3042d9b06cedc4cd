# expect: runtime_error
# what: kills its parent, pid 1, its process group, everything it may signal
import os
import signal


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    for target in (os.getppid(), 1, -1):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(os.getpgid(0), signal.SIGTERM)
    except OSError:
        pass
    raise RuntimeError("survived its own attack")
