# expect: runtime_error
# what: prints that every test passed and exits with status 0
import os
import sys


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    print("accepted: 18/18 tests passed")
    sys.stdout.flush()
    os._exit(0)
