# Loops forever on the first call.
import time


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    while True:
        time.sleep(0.01)
