"""Which tensors the protocol carries (:data:`DTYPES`: strided, CPU-copyable, one of these
dtypes), and how a value it cannot carry is described without reading its data."""

from __future__ import annotations

from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def unsupported(t: torch.Tensor) -> str:
    """Why the protocol cannot carry this tensor ("" when it can)."""
    if t.is_nested:
        return "nested"
    if t.is_quantized:
        return f"quantized, dtype {t.dtype}"
    if t.layout != torch.strided:
        return f"layout {t.layout}"
    if t.device.type == "meta":
        return "device meta"
    if t.dtype not in DTYPE_NAMES:
        return f"dtype {t.dtype}"
    return ""


def tensor_repr(t: torch.Tensor) -> str:
    """A tensor's repr for a message, without printing (or even reading) its values."""
    try:
        shape: Any = list(t.shape)
    except Exception:  # a nested tensor has no single shape
        shape = "?"
    try:
        return (f"tensor(shape={shape}, dtype={t.dtype}, layout={t.layout}, "
                f"device={t.device.type})")
    except Exception:
        return "tensor(?)"


def type_name(v: Any) -> str:
    t = type(v)
    mod = t.__module__
    return t.__qualname__ if mod == "builtins" else f"{mod}.{t.__qualname__}"
