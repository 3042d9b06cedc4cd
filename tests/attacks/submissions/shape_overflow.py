# expect: runtime_error
# what: forges a RESULT with an empty tensor of shape [0, 2**70]
# within: 30

# torch.empty overflowed in the judge: internal_error.

import json
import os
import struct
import time


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    table = [{"dtype": "float32", "shape": [0, 2 ** 70], "offset": 0, "nbytes": 0}]
    payload = json.dumps({"kind": "result", "body": {"value": {"$t": 0}},
                          "tensors": table}).encode()
    os.write(3, struct.pack(">4sIQ", b"TJF1", len(payload), 0) + payload)
    time.sleep(30)
