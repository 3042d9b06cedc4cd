# expect: runtime_error
# what: starts sleeping processes until the kernel refuses, then crashes
import os
import time


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    made = 0
    while True:
        pid = os.fork()  # raises BlockingIOError at the process limit
        if pid == 0:
            time.sleep(3600)
            os._exit(0)
        made += 1
