# expect: time_limit_exceeded
# what: floods the judge with ASK frames and never reads the replies
# within: 40

# The judge's replies had no send deadline: it blocked for 3 minutes, until the
# runner's lifetime ran out. Now a send that cannot complete ends the case in time.

import os

from sandbox.protocol import Kind, encode

FRAME = encode(Kind.ASK, {"q": 1}).tobytes()


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    for _ in range(200_000):
        os.write(3, FRAME)
