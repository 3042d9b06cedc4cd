# expect: wrong_answer
# what: a DataLoader worker leaves a detached daemon that ignores signals and writes forever
import os
import signal
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Haunted(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 0 and os.fork() == 0:  # in the worker process
            os.setsid()
            if os.fork() == 0:
                os.closerange(3, 4096)  # let go of the worker's pipes: the job ends normally
                for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                    signal.signal(sig, signal.SIG_IGN)
                while True:
                    with open("/job/heartbeat", "a") as f:
                        f.write(".")
                    time.sleep(0.05)
            os._exit(0)
        return i


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    loader = DataLoader(Haunted(), batch_size=2, num_workers=2)
    seen = [b.tolist() for b in loader]
    time.sleep(0.2)
    print("ATTACK-RAN", seen, torch.__version__)
    return None
