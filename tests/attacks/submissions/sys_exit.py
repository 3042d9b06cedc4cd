# expect: runtime_error
# what: calls sys.exit(0) from inside the call
import sys


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    sys.exit(0)
