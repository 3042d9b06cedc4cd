"""The framed message protocol between the trusted grader and the sandboxed runner.

Only data crosses the boundary: JSON plus raw tensor bytes. Never pickle, never eval.

A frame is::

    magic "TJF1" | uint32 json_len | uint64 blob_len | json bytes | blob bytes

The JSON object holds ``kind`` (a :class:`Kind`), ``body`` (any encoded value) and
``tensors``, a table of ``{"dtype", "shape", "offset", "nbytes"}`` entries describing
slices of the blob. Inside ``body`` values are plain JSON, except for tagged objects:

* ``{"$t": i}``: tensor number ``i`` of the table;
* ``{"$tuple": [...]}``: a tuple;
* ``{"$dict": [[k, v], ...]}``: a dict whose keys are not all strings (or start with ``$``);
* ``{"$repr": {"type": ..., "repr": ..., "why"?: ...}}``: a value the sender could not
  encode (its type name, a short repr and optionally why, such as ``dtype torch.uint16``),
  so the receiver can say "expected a tensor, got numpy.ndarray". An int too large for JSON
  to carry sensibly (over :data:`MAX_INT_DIGITS` digits) travels as one too.

Every size is capped and every frame is validated before anything is built from it; a
malformed frame raises :class:`ProtocolError` and nothing else (a fuzz test holds it to
that). Every decoded string is valid Unicode: lone surrogates (which JSON's ``\\ud800``
escapes can make, and which no UTF-8 encoder accepts downstream) become U+FFFD.
The dtypes it carries are :mod:`sandbox.dtypes`'s; :class:`sandbox.channel.Channel` sends
and receives frames over a socket. This module needs only the standard library and torch:
the runner imports it inside the sandbox.
"""

from __future__ import annotations

import ctypes
import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import torch

from sandbox.dtypes import DTYPE_NAMES, DTYPES, tensor_repr, type_name, unsupported

# The vocabulary (kinds, errors, decoded values), found here too by its importers
from sandbox.messages import ChannelClosed as ChannelClosed
from sandbox.messages import ChannelTimeout as ChannelTimeout
from sandbox.messages import Kind as Kind
from sandbox.messages import Message as Message
from sandbox.messages import ProtocolError as ProtocolError
from sandbox.messages import Unencodable as Unencodable

MAGIC = b"TJF1"
HEADER = struct.Struct(">4sIQ")
ALIGN = 64

MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_BLOB_BYTES = 512 * 1024 * 1024
MAX_TENSORS = 100_000
MAX_DEPTH = 64
MAX_NDIM = 16
MAX_REPR = 300
MAX_INT_DIGITS = 4000  # below Python's default int/str conversion limit (4300)
MAX_DIM = 1 << 48  # a size no real tensor has; keeps shape arithmetic far from overflow
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# ---------------------------------------------------------------- encoding


class _Encoder:
    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.table: list[dict[str, Any]] = []
        self.chunks: list[bytes | memoryview] = []
        self.keep: list[torch.Tensor] = []
        self.size = 0

    def value(self, v: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            return self.unencodable(v, "nested too deeply")
        # The exact types a batch is made of first (a 16-sample batch is some 50 values):
        # what the general path below would make of them, without its chain of isinstance.
        t = type(v)
        if t is torch.Tensor:
            return self.tensor(v)
        if t is dict:
            for k in v:
                if type(k) is not str or k.startswith("$"):
                    break
            else:
                return {k: self.value(x, depth + 1) for k, x in v.items()}
        elif t is list:
            return [self.value(x, depth + 1) for x in v]
        elif (t is str or t is float or t is bool or v is None
              or (t is int and -_INT_CAP < v < _INT_CAP)):
            return v
        return self._general(v, depth)

    def _general(self, v: Any, depth: int) -> Any:
        if v is None or isinstance(v, bool | str):
            return v
        if isinstance(v, int):
            # A subclass such as IntEnum or numpy's int would not round-trip: send the int.
            v = int(v)
            if abs(v) >= _INT_CAP:  # more digits than the receiver will parse
                return self.unencodable(v, "too large", _int_repr(v))
            return v
        if isinstance(v, float):
            return float(v)
        if isinstance(v, torch.Tensor):
            return self.tensor(v)
        if isinstance(v, list):
            return [self.value(x, depth + 1) for x in v]
        if isinstance(v, tuple):
            return {"$tuple": [self.value(x, depth + 1) for x in v]}
        if isinstance(v, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in v):
                return {k: self.value(x, depth + 1) for k, x in v.items()}
            return {"$dict": [[self.value(k, depth + 1), self.value(x, depth + 1)]
                              for k, x in v.items()]}
        if isinstance(v, Unencodable):
            tagged = {"type": v.type, "repr": v.repr}
            if v.why:
                tagged["why"] = v.why
            return {"$repr": tagged}
        return self.unencodable(v)

    def unencodable(self, v: Any, why: str = "", text: str | None = None) -> Any:
        if self.strict:
            raise TypeError(f"cannot encode {type(v).__qualname__} ({why})"
                            if why else f"cannot encode {type(v).__qualname__}")
        if text is None:
            try:
                text = repr(v)
            except Exception:  # a hostile __repr__ must not break the runner
                text = "<repr failed>"
        try:
            name = type_name(v)
        except Exception:
            name = "<unknown type>"
        tagged = {"type": name[:MAX_REPR], "repr": str(text)[:MAX_REPR]}
        if why:
            tagged["why"] = why[:MAX_REPR]
        return {"$repr": tagged}

    def tensor(self, t: torch.Tensor) -> Any:
        if (type(t) is torch.Tensor and t.layout is torch.strided and t.dtype in DTYPE_NAMES
                and t.is_cpu and not t.is_nested and not t.is_neg() and not t.is_conj()):
            # The common case (a plain CPU tensor with nothing to resolve): a few checks
            # instead of the general path's copies, about half the cost per small tensor.
            return self._add(t if t.is_contiguous() else t.contiguous(), "cpu")
        try:
            if type(t) is not torch.Tensor:
                # A subclass may override numel(), __eq__ ...: send the plain tensor it holds.
                t = torch.Tensor.as_subclass(t, torch.Tensor)
            why = unsupported(t)
        except Exception as e:
            return self.unencodable(t, f"cannot be inspected: {type(e).__name__}")
        if why:
            return self.unencodable(t, why, tensor_repr(t))
        device = t.device.type
        try:
            # A lazily conjugated or negated view (x.conj(), x.conj().imag) holds the
            # un-conjugated values in memory: materialise what it means.
            t = t.detach().resolve_conj().resolve_neg()
            if device != "cpu":
                t = t.cpu()
            t = t.contiguous()
        except Exception as e:  # an exotic tensor torch itself cannot copy
            return self.unencodable(t, f"cannot be copied: {type(e).__name__}",
                                    tensor_repr(t))
        return self._add(t, device)

    def _add(self, t: torch.Tensor, device: str) -> Any:
        """A contiguous CPU tensor into the blob (its memory viewed, not copied)."""
        name = DTYPE_NAMES[t.dtype]
        nbytes = t.numel() * t.element_size()
        pad = (-self.size) % ALIGN
        if pad:
            self.chunks.append(b"\0" * pad)
            self.size += pad
        if nbytes:
            # A view of the tensor's own memory (no numpy needed); the tensor is kept alive
            # in self.keep until the frame has been sent.
            self.keep.append(t)
            self.chunks.append(memoryview((ctypes.c_char * nbytes).from_address(t.data_ptr())))
        self.table.append({"dtype": name, "shape": list(t.shape), "offset": self.size,
                           "nbytes": nbytes, "device": device})
        self.size += nbytes
        if len(self.table) > MAX_TENSORS:
            raise TypeError("too many tensors in one message")
        return {"$t": len(self.table) - 1}


_INT_CAP = 10 ** MAX_INT_DIGITS


def _int_repr(v: int) -> str:
    return f"<an int of about {int(v.bit_length() * 0.30103) + 1} digits>"





@dataclass
class Frame:
    """An encoded frame: buffers to send in order. They view the memory of the tensors in
    ``keep``, which the frame holds alive until it is sent."""

    buffers: list[bytes | memoryview]
    keep: list[torch.Tensor]

    @property
    def nbytes(self) -> int:
        return sum(memoryview(b).nbytes for b in self.buffers)

    def tobytes(self) -> bytes:
        return b"".join(bytes(b) for b in self.buffers)


def encode(kind: Kind, body: Any = None, *, strict: bool = True) -> Frame:
    """Encode one frame. ``strict=False`` (the runner's choice) turns values that cannot be
    sent into ``$repr`` placeholders instead of raising TypeError."""
    enc = _Encoder(strict)
    payload = {"kind": str(kind), "body": enc.value(body), "tensors": enc.table}
    data = json.dumps(payload, separators=(",", ":"), allow_nan=True).encode()
    if len(data) > MAX_JSON_BYTES:
        raise TypeError(f"message too large: {len(data)} bytes of JSON")
    if enc.size > MAX_BLOB_BYTES:
        raise TypeError(f"message too large: {enc.size} bytes of tensor data")
    return Frame([HEADER.pack(MAGIC, len(data), enc.size), data, *enc.chunks], enc.keep)


# ---------------------------------------------------------------- decoding


def decode(data: bytes, blob: bytearray, *, max_blob: int = MAX_BLOB_BYTES,
           copy: bool = True) -> Message:
    """Validate and decode one frame's JSON and blob. Raises ProtocolError, nothing else
    (short of MemoryError): whatever a malformed frame trips over is turned into one.
    With ``copy=False`` the tensors view ``blob`` (which they keep alive) instead of
    copying it: for a blob nothing else holds (a frame just received), whose tensors need
    not be resizable (the grader's own reading of a timed result)."""
    try:
        return _decode(data, blob, copy)
    except ProtocolError:
        raise
    except MemoryError:
        raise
    except Exception as e:  # a check this module lacks: still the sender's fault
        raise ProtocolError(f"malformed frame ({type(e).__name__})") from None


def _parse_int(text: str) -> Any:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return Unencodable("int", f"<an int of {len(text.lstrip('-'))} digits>", "too large")
    return int(text)


def _decode(data: bytes, blob: bytearray, copy: bool = True) -> Message:
    try:
        # The C parser's own ints first: a Python parse_int for each of a batch's hundreds
        # of ints (the tensor table's shapes and offsets) cost more than the rest of the
        # JSON. An int over Python's int/str limit, which no honest sender sends
        # (_Encoder.value), fails that: then the frame is read again, such ints as
        # Unencodable.
        payload = json.loads(data)
    except RecursionError as e:
        raise ProtocolError(f"frame is not valid JSON: {_short(e)}") from None
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, a too long int
        try:
            payload = json.loads(data, parse_int=_parse_int)
        except (ValueError, RecursionError) as e:
            raise ProtocolError(f"frame is not valid JSON: {_short(e)}") from None
    if not isinstance(payload, dict) or set(payload) != {"kind", "body", "tensors"}:
        raise ProtocolError("frame must be an object with exactly kind, body, tensors")
    kind_name = payload["kind"]
    if not isinstance(kind_name, str) or kind_name not in _KINDS:
        raise ProtocolError(f"unknown message kind {_short(kind_name)}")
    kind = Kind(kind_name)
    table = payload["tensors"]
    if not isinstance(table, list) or len(table) > MAX_TENSORS:
        raise ProtocolError(f"tensor table must be a list of at most {MAX_TENSORS} entries")
    tensors = [_tensor(entry, blob, copy) for entry in table]
    body = _value(payload["body"], tensors, 0)
    return Message(kind, body, len(data) + len(blob))


_KINDS = frozenset(k.value for k in Kind)


def _short(v: Any, limit: int = 80) -> str:
    """A capped repr of something a peer sent, for an error message."""
    try:
        text = repr(v) if not isinstance(v, BaseException) else str(v)
    except Exception:
        text = f"<{type(v).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def clean_str(s: str) -> str:
    """The string with every lone surrogate replaced by U+FFFD: valid Unicode, which any
    UTF-8 encoder downstream (a report, an HTTP body, a terminal) accepts."""
    if s.isascii():  # most strings, told without a scan
        return s
    return _LONE_SURROGATE.sub("\ufffd", s) if _LONE_SURROGATE.search(s) else s


_ENTRY_KEYS = frozenset(("dtype", "shape", "offset", "nbytes"))


def _tensor(entry: Any, blob: bytearray, copy: bool = True) -> torch.Tensor:
    if not isinstance(entry, dict) or not entry.keys() >= _ENTRY_KEYS:
        raise ProtocolError("tensor entry must hold dtype, shape, offset, nbytes")
    dtype = DTYPES.get(entry["dtype"]) if isinstance(entry["dtype"], str) else None
    if dtype is None:
        raise ProtocolError(f"tensor dtype {entry['dtype']!r} is not allowed")
    shape, offset, nbytes = entry["shape"], entry["offset"], entry["nbytes"]
    if type(shape) is list and len(shape) == 1 and type(shape[0]) is int:
        # A sequence, most of a batch's tensors: the checks below, on its one size.
        numel = shape[0]
        if not 0 <= numel <= MAX_DIM:
            raise ProtocolError(f"tensor shape {_short(shape)} is not a list of sizes "
                                f"(at most {MAX_NDIM} of them, each at most {MAX_DIM})")
    else:
        if (not isinstance(shape, list) or len(shape) > MAX_NDIM
                or not all(type(s) is int and 0 <= s <= MAX_DIM for s in shape)):
            raise ProtocolError(f"tensor shape {_short(shape)} is not a list of sizes "
                                f"(at most {MAX_NDIM} of them, each at most {MAX_DIM})")
        # An empty tensor's other sizes still enter torch's stride arithmetic (int64).
        if math.prod(s for s in shape if s) > MAX_DIM:
            raise ProtocolError(f"tensor shape {_short(shape)} is too large")
        numel = math.prod(shape)
    if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
        raise ProtocolError("tensor offset and nbytes must be non-negative integers")
    itemsize = dtype.itemsize
    if numel * itemsize != nbytes:
        raise ProtocolError(f"tensor of shape {_short(shape)} and dtype {entry['dtype']} "
                            f"cannot hold {_short(nbytes)} bytes")
    if offset + nbytes > len(blob):
        raise ProtocolError("tensor data lies outside the frame")
    try:
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        if dtype is not torch.bool and offset % itemsize == 0:
            # Read as its dtype at once: one tensor made instead of three (uint8, view,
            # reshape) for the many small tensors of a batch.
            t = torch.frombuffer(blob, dtype=dtype, count=nbytes // itemsize, offset=offset)
            if copy:
                t = t.clone()
            return t if len(shape) == 1 else t.reshape(shape)
        raw = torch.frombuffer(blob, dtype=torch.uint8, count=nbytes, offset=offset)
        if copy:
            raw = raw.clone()
        if dtype is torch.bool:
            return (raw != 0).reshape(shape)  # any byte other than 0 or 1 is normalised
        return raw.view(dtype).reshape(shape)
    except (RuntimeError, ValueError, TypeError, OverflowError) as e:
        raise ProtocolError(f"tensor of shape {_short(shape)} cannot be built: "
                            f"{type(e).__name__}") from None


def _value(v: Any, tensors: list[torch.Tensor], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    t = type(v)  # what json.loads makes: exact types (and Unencodable, see _parse_int)
    if t is str:
        return clean_str(v)
    if t is int or t is float or t is bool or v is None or t is Unencodable:
        return v
    if t is list:
        return [_value(x, tensors, depth + 1) for x in v]
    if t is not dict:
        raise ProtocolError(f"unexpected JSON value {type(v).__name__}")
    if len(v) == 1:
        (tag, inner), = v.items()
        if tag == "$t":
            if type(inner) is not int or not 0 <= inner < len(tensors):
                raise ProtocolError(f"tensor reference {inner!r} is out of range")
            return tensors[inner]
        if tag == "$tuple":
            if not isinstance(inner, list):
                raise ProtocolError("$tuple must hold a list")
            return tuple(_value(x, tensors, depth + 1) for x in inner)
        if tag == "$dict":
            if not isinstance(inner, list) or not all(
                    isinstance(p, list) and len(p) == 2 for p in inner):
                raise ProtocolError("$dict must hold [key, value] pairs")
            out = {}
            for k, x in inner:
                key = _value(k, tensors, depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise ProtocolError("$dict key is not hashable") from None
                out[key] = _value(x, tensors, depth + 1)
            return out
        if tag == "$repr":
            if (not isinstance(inner, dict) or set(inner) - {"why"} != {"type", "repr"}
                    or not all(isinstance(x, str) for x in inner.values())):
                raise ProtocolError("$repr must hold type and repr strings (and maybe why)")
            return Unencodable(clean_str(inner["type"][:MAX_REPR]),
                               clean_str(inner["repr"][:MAX_REPR]),
                               clean_str(inner.get("why", "")[:MAX_REPR]))
    for k in v:
        if k.startswith("$"):
            raise ProtocolError(f"unknown tag in {_short(sorted(v)[:3])}")
    return {clean_str(k): _value(x, tensors, depth + 1) for k, x in v.items()}


def check_header(header: bytes, max_blob: int = MAX_BLOB_BYTES) -> tuple[int, int]:
    """Validate a frame header; return the JSON and blob lengths it announces."""
    magic, json_len, blob_len = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError("frame does not start with the protocol's magic bytes")
    if json_len > MAX_JSON_BYTES:
        raise ProtocolError(f"frame announces {json_len} bytes of JSON "
                            f"(the limit is {MAX_JSON_BYTES})")
    if blob_len > max_blob:
        raise ProtocolError(f"frame announces {blob_len} bytes of tensor data "
                            f"(the limit is {max_blob})")
    return json_len, blob_len


def decode_frame(data: bytes, *, max_blob: int = MAX_BLOB_BYTES) -> Message:
    """Decode one whole frame held in memory (a file written with Frame.tobytes())."""
    if len(data) < HEADER.size:
        raise ProtocolError("data too short for a frame header")
    json_len, blob_len = check_header(data[:HEADER.size], max_blob)
    if len(data) != HEADER.size + json_len + blob_len:
        raise ProtocolError("frame length does not match its header")
    start = HEADER.size + json_len
    return decode(data[HEADER.size:start], bytearray(data[start:]), max_blob=max_blob)
