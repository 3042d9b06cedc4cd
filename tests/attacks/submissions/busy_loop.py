# expect: time_limit_exceeded
# what: spins forever on the CPU
# within: 30
def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    n = 0
    while True:
        n += 1
