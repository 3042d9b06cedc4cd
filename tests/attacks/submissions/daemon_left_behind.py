# expect: wrong_answer
# what: leaves a detached daemon that ignores signals and writes forever
import os
import signal
import time


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                with open("/job/heartbeat", "a") as f:
                    f.write(".")
                time.sleep(0.05)
        os._exit(0)
    time.sleep(0.2)
    return None
