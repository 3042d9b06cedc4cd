# expect: runtime_error
# what: forges a 15 MB ERROR frame (type name, message, traceback)

# The runner caps what it sends; a forged frame bypasses those caps, so the judge
# caps what it keeps.

import os
import time

from sandbox.protocol import Kind, encode


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    os.write(3, encode(Kind.ERROR, {"type": "T" * 5_000_000, "message": "M" * 5_000_000,
                                    "traceback": "B" * 5_000_000, "line": [1]}).tobytes())
    time.sleep(30)
