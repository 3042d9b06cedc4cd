# expect: memory_limit_exceeded
# what: allocates memory until there is none
def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))
