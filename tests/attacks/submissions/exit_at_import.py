# expect: runtime_error|compile_error
# what: ends the process while being imported, before the runner says READY
import os

os._exit(0)


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return None
