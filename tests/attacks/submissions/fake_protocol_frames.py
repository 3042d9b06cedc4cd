# expect: runtime_error|wrong_answer
# what: writes well-formed protocol frames (READY, RESULT "accepted") to every descriptor
import os

from sandbox.protocol import Kind, encode

READY = {"names": ["collate"], "torch": "x", "pid": 1, "cuda": False}
FRAMES = (encode(Kind.READY, READY).tobytes()
          + encode(Kind.RESULT, {"value": {"verdict": "accepted", "passed": True}}).tobytes())
for fd in range(256):
    try:
        os.write(fd, FRAMES)
    except OSError:
        pass


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    for fd in range(256):
        try:
            os.write(fd, FRAMES)
        except OSError:
            pass
    return {"verdict": "accepted"}
