# expect: time_limit_exceeded
# what: ignores every signal it may ignore and sleeps forever
# within: 30
import signal
import time


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    for sig in signal.valid_signals():
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
    while True:
        time.sleep(1)
