# expect: output_limit_exceeded
# what: prints gigabytes
import sys


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    line = "x" * 65535 + "\n"
    for _ in range(1 << 16):  # 4 GiB
        sys.stdout.write(line)
