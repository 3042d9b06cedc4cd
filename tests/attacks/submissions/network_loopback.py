# expect: wrong_answer
# what: tries to reach the host's loopback (a listener runs there) and any other network
import socket

import torch


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    results = []
    for family, address in [(socket.AF_INET, ("127.0.0.1", p)) for p in range(47001, 47011)] + \
            [(socket.AF_INET6, ("::1", 47001)), (socket.AF_INET, ("10.0.2.2", 80))]:
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
            s.settimeout(0.5)
            s.connect(address)
            s.sendall(b"TJ-ESCAPED")
            results.append(f"{address}: connected")
        except OSError as e:
            results.append(f"{address}: {type(e).__name__} {e.errno}")
    for family in (getattr(socket, "AF_NETLINK", 16), getattr(socket, "AF_PACKET", 17)):
        try:
            socket.socket(family, socket.SOCK_RAW)
            results.append(f"family {family}: opened")
        except OSError as e:
            results.append(f"family {family}: {e.errno}")
    print("ATTACK-RAN", results)
    return {"input_ids": torch.zeros(1, 1, dtype=torch.long),
            "attention_mask": torch.zeros(1, 1, dtype=torch.bool), "labels": torch.zeros(1)}
