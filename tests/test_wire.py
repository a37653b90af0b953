"""The wire format: frames are a 4-byte length + msgpack; arrays are ext type 1 holding
msgpack [dtype_str, shape, raw C-order bytes]. Checked against plain msgpack, so a peer in
another language that follows docs/connector.md interoperates."""

import os
import threading
import time
from pathlib import Path

import msgpack
import numpy as np
import pytest

from polar.errors import ProtocolError
from polar.wire import (
    HEADER,
    ChannelTimeout,
    FramedChannel,
    FrameTooLarge,
    decode,
    encode,
    pack_frame,
)


def reference(obj):
    def default(o):
        if isinstance(o, np.ndarray):
            a = np.ascontiguousarray(o)
            return msgpack.ExtType(1, msgpack.packb([a.dtype.str, list(o.shape), a.tobytes()]))
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, (set, frozenset)):
            return list(o)
        raise TypeError(type(o))

    return msgpack.packb(obj, default=default, use_bin_type=True)


@pytest.mark.parametrize("value", [
    np.arange(12, dtype=np.int8).reshape(3, 4),
    np.arange(12, dtype=np.float32).reshape(3, 4).T,  # not C-contiguous
    np.asfortranarray(np.ones((2, 3), np.int64)),
    np.zeros((0, 4), np.uint16),
    np.zeros(70_000, np.bool_),  # a bin32 header
    np.array([1 + 2j], np.complex64),
    np.array(3.5),  # 0-d keeps its shape
    {"nested": [np.int8(3), np.float64(0.5), {1, 2}], "s": "text", "b": b"raw"},
])
def test_bytes_match_plain_msgpack_and_round_trip(value):
    frame = pack_frame({"obs": value})
    body = reference({"obs": value})
    assert frame == HEADER.pack(len(body)) + body
    out = decode(frame[4:])["obs"]
    if isinstance(value, np.ndarray):
        assert out.shape == value.shape and out.dtype == value.dtype and np.array_equal(out, value)
        assert out.flags.writeable


def test_rejections_are_clear():
    with pytest.raises(ProtocolError, match="cannot send a numpy array of dtype object"):
        encode(np.array([object()], dtype=object))
    with pytest.raises(ProtocolError, match="cannot send a value of type PosixPath"):
        encode({"p": Path("/")})
    wrong_size = msgpack.ExtType(1, msgpack.packb(["|i1", [3], b"\x00\x01"]))
    with pytest.raises(ProtocolError, match="ndarray payload has 2 bytes, shape \\[3\\] needs 3"):
        decode(msgpack.packb(wrong_size))
    with pytest.raises(ProtocolError, match="refusing ndarray of dtype"):
        decode(msgpack.packb(msgpack.ExtType(1, msgpack.packb(["|O", [1], b"\x00" * 8]))))
    with pytest.raises(ProtocolError, match="unknown msgpack extension type 5"):
        decode(msgpack.packb(msgpack.ExtType(5, b"")))
    with pytest.raises(ProtocolError, match="malformed frame"):
        decode(b"\xc1")
    with pytest.raises(FrameTooLarge, match="frame of 102 bytes exceeds the limit of 10 bytes"):
        pack_frame("x" * 100, max_frame=10)


def test_channel_round_trip_oversized_and_timeout():
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    a, b = FramedChannel(r1, w2, max_frame=1024), FramedChannel(r2, w1, max_frame=1024)
    a.send({"x": np.arange(3)})
    assert b.recv(timeout=1)["x"].tolist() == [0, 1, 2]
    with pytest.raises(ChannelTimeout):
        a.recv(timeout=0.05)
    os.write(w1, HEADER.pack(10_000) + b"x")
    with pytest.raises(FrameTooLarge, match="incoming frame of 10000 bytes exceeds the limit of 1024"):
        a.recv(timeout=1)
    for fd in (r1, w1, r2, w2):
        os.close(fd)


# -- FramedChannel (shared by the connector and the sandbox hosts) -------------------------


def test_send_to_a_peer_that_stops_reading_times_out() -> None:
    r, w = os.pipe()
    try:
        ch = FramedChannel(r, w, 1 << 22)
        t0 = time.monotonic()
        with pytest.raises(ChannelTimeout, match="stopped reading"):
            ch.send({"blob": b"x" * (1 << 21)}, timeout=0.3)  # far more than a pipe buffer
        assert time.monotonic() - t0 < 2.0
    finally:
        os.close(r)
        os.close(w)


def test_spin_backs_off_after_misses_and_resumes_after_a_hit() -> None:
    r, w = os.pipe()
    try:
        ch = FramedChannel(r, w, 1 << 20, spin_s=0.001)
        with pytest.raises(ChannelTimeout):
            ch.recv(timeout=0.01)  # spins 1 ms, misses
        assert (ch._skip_spins, ch._backoff) == (1, 2)
        with pytest.raises(ChannelTimeout):
            ch.recv(timeout=0.01)  # sleeps without spinning
        assert (ch._skip_spins, ch._backoff) == (0, 2)
        with pytest.raises(ChannelTimeout):
            ch.recv(timeout=0.01)  # spins again, misses again: a longer back-off
        assert (ch._skip_spins, ch._backoff) == (2, 4)
        ch._skip_spins, ch.spin_s = 0, 5.0  # a long spin the writer below lands in
        writer = threading.Timer(0.05, lambda: os.write(w, pack_frame({"x": 1})))
        writer.start()
        assert ch.recv(timeout=10) == {"x": 1}
        writer.join()
        assert ch._backoff == 2  # a hit halves the back-off
    finally:
        os.close(r)
        os.close(w)


def test_spin_channel_frames_split_across_reads_and_oversized_frames() -> None:
    r, w = os.pipe()
    try:
        ch = FramedChannel(r, w, 1 << 10, spin_s=0.0001)
        frame = pack_frame({"a": [1, 2, 3]})
        os.write(w, frame[:3])  # a partial header: the rest comes later, from another thread
        writer = threading.Timer(0.05, lambda: os.write(w, frame[3:] + pack_frame(7)))
        writer.start()
        assert ch.recv(timeout=5) == {"a": [1, 2, 3]}
        assert ch.recv(timeout=5) == 7  # the second frame came in the same read
        writer.join()
        os.write(w, HEADER.pack(1 << 11) + b"x")
        with pytest.raises(FrameTooLarge, match="exceeds the limit of 1024 bytes"):
            ch.recv(timeout=5)
    finally:
        os.close(r)
        os.close(w)

