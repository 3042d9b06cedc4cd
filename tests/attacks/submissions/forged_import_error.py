# expect: compile_error
# what: forges an IMPORT_ERROR whose 'missing' is not a list of names
# within: 30

# Describing it crashed the judge (", ".join(5)): internal_error.

import os
import time

from sandbox.protocol import Kind, encode

os.write(3, encode(Kind.IMPORT_ERROR, {"where": "submission", "type": "X", "message": "m",
                                       "missing": 5, "line": "x" * 100,
                                       "traceback": ["not", "a", "string"]}).tobytes())
time.sleep(60)


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    return None
