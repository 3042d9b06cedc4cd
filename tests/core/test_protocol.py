"""The boundary's wire format: round trips, caps, and every kind of malformed frame."""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest
import torch

from sandbox import protocol
from sandbox.protocol import (
    HEADER,
    MAGIC,
    Channel,
    ChannelClosed,
    ChannelTimeout,
    Kind,
    ProtocolError,
    Unencodable,
    decode_frame,
    encode,
)


def roundtrip(value, strict=True):
    return decode_frame(encode(Kind.RESULT, value, strict=strict).tobytes()).body


def raw_frame(payload: dict | bytes, blob: bytes = b"") -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return HEADER.pack(MAGIC, len(data), len(blob)) + data + blob


def test_values_round_trip_with_types_kept():
    value = {
        "ids": torch.arange(12).reshape(3, 4),
        "mask": torch.tensor([[True, False], [False, True]]),
        "scalar": torch.tensor(2.5, dtype=torch.float64),
        "empty": torch.empty(0, 5, dtype=torch.int32),
        "half": torch.ones(3, dtype=torch.bfloat16),
        "view": torch.arange(12).reshape(3, 4).t(),
        "tuple": (1, 2.0, None, "x", True),
        "int_keys": {1: "a", 2: "b"},
        "dollar": {"$t": 1},
        "nested": [[1, [2, [3]]]],
        "nan": float("nan"),
    }
    got = roundtrip(value)
    for key in ("ids", "mask", "scalar", "empty", "half", "view"):
        assert got[key].dtype == value[key].dtype
        assert torch.equal(got[key], value[key])
    assert got["tuple"] == (1, 2.0, None, "x", True)
    assert got["int_keys"] == {1: "a", 2: "b"}
    assert got["dollar"] == {"$t": 1}
    assert got["nested"] == [[1, [2, [3]]]]
    assert got["nan"] != got["nan"]


def test_decoded_tensors_own_their_memory():
    t = torch.arange(4)
    got = roundtrip([t, t])
    got[0][0] = 99
    assert got[1][0] == 0 and t[0] == 0


def test_strict_encoding_refuses_unknown_types():
    with pytest.raises(TypeError):
        encode(Kind.RESULT, {"x": object()})


def test_lenient_encoding_describes_unknown_types():
    import numpy as np

    got = roundtrip({"a": np.zeros(2), "s": {1, 2}}, strict=False)
    assert isinstance(got["a"], Unencodable) and got["a"].type == "numpy.ndarray"
    assert got["s"].type == "set"


def test_hostile_repr_does_not_break_encoding():
    class Evil:
        def __repr__(self):
            raise RuntimeError("no")

    assert roundtrip(Evil(), strict=False).repr == "<repr failed>"


def test_bool_bytes_other_than_0_and_1_are_normalised():
    payload = {"kind": "result", "body": {"$t": 0},
               "tensors": [{"dtype": "bool", "shape": [3], "offset": 0, "nbytes": 3}]}
    got = decode_frame(raw_frame(payload, b"\x00\x02\xff")).body
    assert got.tolist() == [False, True, True]


@pytest.mark.parametrize("payload, blob, match", [
    (b"not json", b"", "not valid JSON"),
    ({"kind": "result", "body": 1}, b"", "exactly kind, body, tensors"),
    ({"kind": "result", "body": 1, "tensors": [], "extra": 1}, b"", "exactly"),
    ({"kind": "sudo", "body": 1, "tensors": []}, b"", "unknown message kind"),
    ({"kind": "result", "body": {"$t": 0}, "tensors": []}, b"", "out of range"),
    ({"kind": "result", "body": {"$t": "0"}, "tensors": []}, b"", "out of range"),
    ({"kind": "result", "body": {"$eval": "1"}, "tensors": []}, b"", "unknown tag"),
    ({"kind": "result", "body": {"$tuple": 3}, "tensors": []}, b"", "must hold a list"),
    ({"kind": "result", "body": {"$dict": [[[1], 2]]}, "tensors": []}, b"", "not hashable"),
    ({"kind": "result", "body": {"$repr": {"type": 1}}, "tensors": []}, b"", "type and repr"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "object", "shape": [1],
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "not allowed"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [2],
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "cannot hold"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [-1],
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "not a list of sizes"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [1],
      "offset": 8, "nbytes": 8}]}, b"\0" * 8, "outside the frame"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [1],
      "offset": -8, "nbytes": 8}]}, b"\0" * 8, "non-negative"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [1] * 40,
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "not a list of sizes"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64"}]}, b"", "must hold"),
])
def test_malformed_frames_are_rejected(payload, blob, match):
    with pytest.raises(ProtocolError, match=match):
        decode_frame(raw_frame(payload, blob))


def test_deep_nesting_is_rejected():
    body: object = 1
    for _ in range(protocol.MAX_DEPTH + 5):
        body = [body]
    with pytest.raises(ProtocolError, match="nested too deeply"):
        decode_frame(raw_frame({"kind": "result", "body": body, "tensors": []}))


def test_bad_magic_and_length_mismatch():
    good = encode(Kind.RESULT, 1).tobytes()
    with pytest.raises(ProtocolError, match="magic"):
        decode_frame(b"XXXX" + good[4:])
    with pytest.raises(ProtocolError, match="does not match"):
        decode_frame(good + b"trailing")
    with pytest.raises(ProtocolError, match="too short"):
        decode_frame(good[:5])


def test_oversized_frames_are_refused_before_reading_them():
    a, b = socket.socketpair()
    try:
        a.sendall(HEADER.pack(MAGIC, protocol.MAX_JSON_BYTES + 1, 0))
        with pytest.raises(ProtocolError, match="bytes of JSON"):
            Channel(b).recv(time.monotonic() + 1)
        a.sendall(HEADER.pack(MAGIC, 2, 10_000_000))
        with pytest.raises(ProtocolError, match="tensor data"):
            Channel(b, max_blob=1_000_000).recv(time.monotonic() + 1)
    finally:
        a.close()
        b.close()


def test_encoder_refuses_frames_over_the_cap(monkeypatch):
    monkeypatch.setattr(protocol, "MAX_BLOB_BYTES", 1000)
    with pytest.raises(TypeError, match="too large"):
        encode(Kind.RESULT, torch.zeros(1000))


def test_channel_round_trip_large_tensor_and_timeout_and_close():
    a, b = socket.socketpair()
    ca, cb = Channel(a), Channel(b)
    big = torch.randn(512, 1024)
    import threading

    sender = threading.Thread(target=ca.send, args=(Kind.CALL, {"x": big}))
    sender.start()
    msg = cb.recv(time.monotonic() + 10)
    sender.join()
    assert msg.kind is Kind.CALL and torch.equal(msg.body["x"], big)
    with pytest.raises(ChannelTimeout):
        cb.recv(time.monotonic() + 0.05)
    a.sendall(HEADER.pack(MAGIC, 10, 0) + b"{")  # a partial frame, then the peer leaves
    a.close()
    with pytest.raises(ChannelClosed):
        cb.recv(time.monotonic() + 1)
    b.close()


def test_header_layout_is_stable():
    frame = encode(Kind.BYE).tobytes()
    magic, json_len, blob_len = struct.unpack(">4sIQ", frame[:16])
    assert magic == b"TJF1" and blob_len == 0 and json_len == len(frame) - 16
