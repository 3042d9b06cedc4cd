# expect: runtime_error
# what: fills its job folder, /tmp and /dev/shm with files until writes fail
import os


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    block = b"\0" * (1 << 20)
    for folder in ("/dev/shm", "/tmp", "/job"):
        for i in range(100000):
            try:
                with open(os.path.join(folder, f"fill{i}"), "wb") as f:
                    for _ in range(32):
                        f.write(block)
            except OSError:
                break
    with open("/job/one-more", "wb") as f:  # raises: ENOSPC
        for _ in range(64):
            f.write(block)
