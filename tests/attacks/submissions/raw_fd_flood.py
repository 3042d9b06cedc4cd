# expect: output_limit_exceeded
# what: floods stderr through the raw file descriptor while being imported
import os

chunk = b"E" * (1 << 20)
for _ in range(4096):  # 4 GiB
    os.write(2, chunk)


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return None
