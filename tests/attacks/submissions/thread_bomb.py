# expect: runtime_error
# what: starts threads until none can be started
import threading
import time


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    while True:
        threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
