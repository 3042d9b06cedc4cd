# expect: runtime_error
# what: crashes the interpreter with a segmentation fault
import ctypes


def collate(batch, pad_id=0, pad_to_multiple_of=None, padding_side="right"):
    ctypes.string_at(0)
