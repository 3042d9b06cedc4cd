"""The boundary's wire format: round trips, caps, and every kind of malformed frame."""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest
import torch

from sandbox import protocol
from sandbox.channel import Channel
from sandbox.protocol import (
    HEADER,
    MAGIC,
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


def test_every_kind_of_plain_tensor_round_trips_as_its_own_copy():
    """The fast path (plain CPU tensors) and the general one give the same tensors: a view
    with an offset, one that needs grad, a 0-d one, one negated lazily; each received
    tensor owns its memory (resizing one does not touch another)."""
    base = torch.arange(40, dtype=torch.int64)
    sent = [base[3:9], base[::3], torch.ones(2, 3, requires_grad=True), torch.tensor(7),
            torch.zeros(3, dtype=torch.float16), torch.tensor([1.0, 2.0]).neg().to(
                torch.complex64).conj().imag, torch.tensor([True, False])]
    got = roundtrip(sent)
    for g, s in zip(got, sent, strict=True):
        assert g.dtype == s.dtype and torch.equal(g, s.detach().resolve_conj().resolve_neg())
        assert not g.requires_grad and g.untyped_storage().nbytes() == g.numel() * g.element_size()
    got[0].resize_(100)
    assert torch.equal(got[1], base[::3])


def test_a_tensor_at_an_offset_its_dtype_does_not_align_to_is_still_read_right():
    values = torch.tensor([1.5, -2.0], dtype=torch.float64)
    blob = b"\0" * 3 + values.numpy().tobytes() + b"\0" * 5
    frame = raw_frame({"kind": "result", "body": {"$t": 0}, "tensors": [
        {"dtype": "float64", "shape": [2], "offset": 3, "nbytes": 16}]}, blob)
    assert torch.equal(decode_frame(frame).body, values)


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
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [2 ** 49],
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "not a list of sizes"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [True],
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "not a list of sizes"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [1.0],
      "offset": 0, "nbytes": 8}]}, b"\0" * 8, "not a list of sizes"),
    ({"kind": "result", "body": None, "tensors": [{"dtype": "int64", "shape": [1],
      "offset": 0, "nbytes": 16}]}, b"\0" * 16, "cannot hold"),
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


def test_one_frame_of_many_small_tensors_goes_in_few_writes_to_two_channels(monkeypatch):
    """A STAGE of 300 short sequences (and a 2 MiB tensor) is encoded once and sent to two
    runners: the small buffers are joined, the big one goes uncopied, both get it whole."""
    import threading

    from sandbox import channel as channel_module

    batch = [torch.arange(i % 7 + 1) * i for i in range(300)]
    big = torch.arange(1 << 18, dtype=torch.int64)  # 2 MiB
    frame = encode(Kind.STAGE, {"args": [batch, big]})
    pieces = list(channel_module.coalesced(frame.buffers))
    assert len(frame.buffers) > 300 and len(pieces) <= 4
    assert b"".join(bytes(memoryview(p)) for p in pieces) == frame.tobytes()
    for _ in range(2):
        a, b = socket.socketpair()
        sender = threading.Thread(target=Channel(a).send_frame, args=(frame,))
        sender.start()
        msg = Channel(b).recv(time.monotonic() + 10)
        sender.join()
        got_batch, got_big = msg.body["args"]
        assert all(torch.equal(g, t) for g, t in zip(got_batch, batch, strict=True))
        assert torch.equal(got_big, big)
        a.close()
        b.close()


def test_decoding_without_a_copy_views_the_blob_it_keeps_alive():
    raw = encode(Kind.RESULT, [torch.arange(6, dtype=torch.int64), torch.tensor([True, False])])
    data = raw.tobytes()
    json_len = HEADER.unpack(data[:HEADER.size])[1]
    blob = bytearray(data[HEADER.size + json_len:])
    ints, flags = protocol.decode(data[HEADER.size:HEADER.size + json_len], blob,
                                  copy=False).body
    del blob, raw, data
    assert ints.tolist() == list(range(6)) and flags.tolist() == [True, False]


def test_header_layout_is_stable():
    frame = encode(Kind.BYE).tobytes()
    magic, json_len, blob_len = struct.unpack(">4sIQ", frame[:16])
    assert magic == b"TJF1" and blob_len == 0 and json_len == len(frame) - 16


# ---------------------------------------------------------------- what a hostile runner sends


def test_lone_surrogates_become_replacement_characters():
    """JSON's \\ud800 escapes decode to lone surrogates, which no UTF-8 encoder accepts
    downstream (the CLI's print, httpx posting a report): decoded strings are valid."""
    body = {"message": "bad \ud800 char", "\udfff key": ["x\udbff", ("\ud800",)],
            "ok": "😀 中文", "$dict": 1}
    got = roundtrip(body, strict=False)
    assert got == {"message": "bad \ufffd char", "\ufffd key": ["x\ufffd", ("\ufffd",)],
                   "ok": "😀 中文", "$dict": 1}
    raw = raw_frame(b'{"kind":"error","body":{"type":"E\\ud800","message":"\\udc00"},'
                    b'"tensors":[]}')
    msg = decode_frame(raw)
    assert msg.body == {"type": "E\ufffd", "message": "\ufffd"}
    json.dumps(msg.body, ensure_ascii=False).encode("utf-8")  # encodes now
    rep = roundtrip(Unencodable("x\ud800", "y\udfff", "z\ud800"))
    assert rep == Unencodable("x\ufffd", "y\ufffd", "z\ufffd")


def test_huge_ints_travel_as_placeholders():
    big = 10 ** 5000
    got = roundtrip({"v": big, "ok": 10 ** 3000, "neg": -big}, strict=False)
    assert got["ok"] == 10 ** 3000
    assert got["v"] == Unencodable("int", "<an int of about 5001 digits>", "too large")
    assert got["neg"].type == "int"
    with pytest.raises(TypeError, match="too large"):
        encode(Kind.RESULT, big)
    # A forged frame with the digits in it (what a runner with the int/str limit lifted
    # sends): not a ValueError out of json.loads, a placeholder.
    digits = b"9" * 5001
    msg = decode_frame(raw_frame(b'{"kind":"result","body":{"value":' + digits
                                 + b',"n":-' + digits + b'},"tensors":[]}'))
    assert msg.body["value"] == Unencodable("int", "<an int of 5001 digits>", "too large")
    assert msg.body["n"].type == "int"


@pytest.mark.parametrize("shape", [[0, 2 ** 70], [0, 2 ** 62, 2 ** 62], [0, 2 ** 63],
                                   [0] + [2 ** 40] * 3])
def test_forged_empty_tensors_with_absurd_shapes_are_refused(shape):
    payload = {"kind": "result", "body": {"value": {"$t": 0}},
               "tensors": [{"dtype": "float32", "shape": shape, "offset": 0, "nbytes": 0}]}
    with pytest.raises(ProtocolError, match="shape"):
        decode_frame(raw_frame(payload))


def test_empty_tensors_with_large_sizes_still_round_trip():
    t = torch.empty(0, 10 ** 9)
    got = roundtrip(t)
    assert got.shape == (0, 10 ** 9)


def test_lazily_conjugated_and_negated_tensors_are_sent_as_they_read():
    z = torch.tensor([[1 + 2j, 3 - 1j], [0.5j, -2 + 0j]])
    for view in (z.conj(), z.conj().t(), z.conj().imag, torch.zeros(2, 2).neg().to(
            torch.complex64).imag, z.conj()[::2]):
        got = roundtrip(view)
        assert torch.equal(got, view.resolve_conj().resolve_neg()), view


@pytest.mark.parametrize("make, why", [
    (lambda: torch.zeros(3, dtype=torch.uint16), "dtype torch.uint16"),
    (lambda: torch.zeros(3).to(torch.float8_e4m3fn), "dtype torch.float8_e4m3fn"),
    (lambda: torch.zeros(3, 3).to_sparse(), "layout torch.sparse_coo"),
    (lambda: torch.zeros(3, device="meta"), "device meta"),
    (lambda: torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]), "nested"),
    (lambda: torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.qint8),
     "quantized, dtype torch.qint8"),
])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_tensors_the_protocol_cannot_carry_say_why(make, why):
    got = roundtrip({"x": make()}, strict=False)["x"]
    assert isinstance(got, Unencodable)
    assert got.type == "torch.Tensor" and got.why == why
    with pytest.raises(TypeError, match="cannot encode"):
        encode(Kind.RESULT, make())


def test_a_tensor_subclass_is_sent_as_the_tensor_it_holds():
    class Liar(torch.Tensor):
        def numel(self):
            return 1

    got = roundtrip(torch.arange(6.0).reshape(2, 3).as_subclass(Liar))
    assert type(got) is torch.Tensor and torch.equal(got, torch.arange(6.0).reshape(2, 3))


def _valid_frames() -> list[bytes]:
    bodies = [
        None, 1, "text", [1, 2.5, None, True],
        {"value": {"ids": torch.arange(6).reshape(2, 3), "mask": torch.ones(2, 3).bool()}},
        {"type": "ValueError", "message": "m", "traceback": "tb", "line": 3},
        ({1: "a"}, (torch.zeros(0, 4), "x")),
        {"where": "submission", "missing": ["collate"], "type": "NameError"},
    ]
    frames = [encode(Kind.RESULT, b).tobytes() for b in bodies]
    frames.append(encode(Kind.RESULT, Unencodable("numpy.ndarray", "array([])", "w")).tobytes())
    return frames


_JSON_TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\ud800", b"$t", b"$dict",
                b"$tuple", b"$repr", b"1e999", b"-0", b"9" * 5000, b"NaN", b"null", b"true",
                b'"$t":0', b'"shape":[0,1180591620717411303424]', b"2" * 30, b"\xff", b"\x00",
                b'"tensors":[{}]', b'"kind":"ready"', b"[" * 200]


def _mutate(rng, frame: bytes) -> bytes:
    head, data = frame[:HEADER.size], bytearray(frame[HEADER.size:])
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        at = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a byte
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif op == 1:  # insert a JSON-ish token
            data[at:at] = rng.choice(_JSON_TOKENS)
        elif op == 2 and data:  # delete a span
            del data[at:at + rng.randint(1, 8)]
        elif op == 3:  # duplicate a span
            data[at:at] = data[at:at + rng.randint(1, 32)]
        else:  # change a number somewhere
            digits = [i for i, c in enumerate(data) if 48 <= c <= 57]
            if digits:
                i = rng.choice(digits)
                data[i:i + 1] = rng.choice([b"-1", b"99999999999", b"0", b"1.5", b"2e30"])
    _, json_len, _ = struct.unpack(">4sIQ", head)
    json_len = min(len(data), json_len + (len(data) - (len(frame) - HEADER.size)))
    json_len = max(0, json_len)
    return HEADER.pack(MAGIC, json_len, len(data) - json_len) + bytes(data)


def test_fuzzed_frames_raise_protocol_error_and_nothing_else():
    """Random mutations of valid frames (bytes flipped, JSON tokens inserted, spans cut or
    doubled, numbers changed): decoding returns a message or raises ProtocolError."""
    import random

    rng = random.Random(20240607)
    frames = _valid_frames()
    decoded = refused = 0
    for i in range(4000):
        frame = _mutate(rng, rng.choice(frames))
        try:
            msg = decode_frame(frame)
        except ProtocolError:
            refused += 1
            continue
        except Exception as e:  # pragma: no cover - the failure this test looks for
            pytest.fail(f"mutation {i} raised {type(e).__name__}: {e!r} on {frame[:200]!r}")
        decoded += 1
        json.dumps(msg.body, default=repr, ensure_ascii=False).encode("utf-8")
    assert decoded > 100 and refused > 1000  # both paths were exercised


def test_send_honours_a_deadline_when_the_peer_stops_reading():
    a, b = socket.socketpair()
    try:
        ca = Channel(a)
        started = time.monotonic()
        with pytest.raises(ChannelTimeout):
            for _ in range(10_000):  # b never reads: the buffer fills, then sendall blocks
                ca.send(Kind.REPLY, {"pad": "x" * 10_000}, deadline=time.monotonic() + 0.3)
        assert time.monotonic() - started < 5
        with pytest.raises(ChannelTimeout):
            ca.send(Kind.REPLY, None, deadline=time.monotonic() - 1)
    finally:
        a.close()
        b.close()
    with pytest.raises(ChannelClosed):
        ca.send(Kind.BYE, deadline=time.monotonic() + 1)


def test_subclasses_of_plain_types_go_as_the_plain_values_they_hold():
    """The encoder's fast path takes exact types only; a subclass (an IntEnum, an
    OrderedDict, a str or list subclass, a dict whose keys are not all plain strings) takes
    the general path and arrives as the plain value it holds."""
    import collections
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str):
        pass

    class Items(list):
        pass

    value = {"level": Level.HIGH, "ordered": collections.OrderedDict(a=1, b=[2]),
             "name": Name("pad"), "items": Items([1, (2, 3)]), "keys": {1: "a", "$x": 2},
             "big": 10 ** 4001, "flag": True, "none": None, "f": 0.5}
    got = roundtrip(value, strict=False)
    assert got["level"] == 3 and type(got["level"]) is int
    assert got["ordered"] == {"a": 1, "b": [2]} and type(got["ordered"]) is dict
    assert got["name"] == "pad" and type(got["name"]) is str
    assert got["items"] == [1, (2, 3)] and type(got["items"]) is list
    assert got["keys"] == {1: "a", "$x": 2}
    assert isinstance(got["big"], Unencodable) and got["big"].why == "too large"
    assert (got["flag"], got["none"], got["f"]) == (True, None, 0.5)
