"""The framed wire protocol shared by the harness connector and the sandbox workers.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of msgpack.
Numpy arrays travel as msgpack extension type 1 whose payload is itself msgpack:
`[dtype_str, shape, raw_bytes]` (C order). Nothing is ever pickled, so a peer written in
any language can speak it, and a hostile peer cannot make us execute code.
"""

from __future__ import annotations

import math
import os
import select
import struct
import time
from typing import Any

import msgpack
import numpy as np

from polar.errors import ProtocolError

HEADER = struct.Struct(">I")
NDARRAY_EXT = 1
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
_ALLOWED_DTYPE_KINDS = set("biufc?")  # no object arrays: they would need pickle


class ChannelClosed(ProtocolError):
    """The peer closed its end (it exited or crashed)."""


class ChannelTimeout(ProtocolError):
    """The peer did not answer within the deadline."""


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _ALLOWED_DTYPE_KINDS:
            raise TypeError(f"cannot send a numpy array of dtype {obj.dtype}")
        arr = obj if obj.flags.c_contiguous else np.ascontiguousarray(obj)  # keeps 0-d shapes
        body = msgpack.packb([arr.dtype.str, list(arr.shape), arr.tobytes()], use_bin_type=True)
        return msgpack.ExtType(NDARRAY_EXT, body)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    raise TypeError(f"cannot send a value of type {type(obj).__name__}")


def _ext_hook(code: int, data: bytes) -> Any:
    if code != NDARRAY_EXT:
        raise ProtocolError(f"unknown msgpack extension type {code}")
    try:
        dtype_str, shape, raw = msgpack.unpackb(data, raw=False)
        dtype = np.dtype(dtype_str)
    except Exception as err:  # malformed extension payload from the peer
        raise ProtocolError(f"malformed ndarray payload: {err}") from None
    if dtype.kind not in _ALLOWED_DTYPE_KINDS:
        raise ProtocolError(f"refusing ndarray of dtype {dtype}")
    count = math.prod(shape)
    if count * dtype.itemsize != len(raw):
        raise ProtocolError(f"ndarray payload has {len(raw)} bytes, shape {shape} needs {count * dtype.itemsize}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def encode(obj: Any) -> bytes:
    """Serialise a message body (no header)."""
    try:
        return msgpack.packb(obj, default=_default, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as err:
        raise ProtocolError(f"cannot encode message: {err}") from None


def decode(payload: bytes) -> Any:
    """Deserialise a message body; malformed bytes raise ProtocolError."""
    try:
        return msgpack.unpackb(payload, raw=False, ext_hook=_ext_hook, strict_map_key=False)
    except ProtocolError:
        raise
    except Exception as err:
        raise ProtocolError(f"malformed frame: {type(err).__name__}: {err}") from None


def pack_frame(obj: Any, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    body = encode(obj)
    if len(body) > max_frame:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the limit of {max_frame} bytes")
    return HEADER.pack(len(body)) + body


class FramedChannel:
    """Frames over a pair of file descriptors (pipes or one socket), with deadlines.

    Reads are buffered so a burst of small frames costs one syscall; `recv` blocks at most
    `timeout` seconds and raises ChannelTimeout, ChannelClosed or ProtocolError.
    """

    def __init__(self, read_fd: int, write_fd: int, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.max_frame = max_frame
        self._buf = bytearray()

    def send(self, obj: Any) -> None:
        data = memoryview(pack_frame(obj, self.max_frame))
        while data:
            try:
                n = os.write(self.write_fd, data)
            except (BrokenPipeError, ConnectionResetError):
                raise ChannelClosed("peer closed the channel") from None
            data = data[n:]

    def _fill(self, deadline: float | None) -> None:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout("no answer before the deadline")
            ready, _, _ = select.select([self.read_fd], [], [], remaining)
            if not ready:
                raise ChannelTimeout("no answer before the deadline")
        try:
            chunk = os.read(self.read_fd, 1 << 16)  # 1 MiB reads cost ~15x more per call
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise ChannelClosed("peer closed the channel")
        self._buf += chunk

    def recv(self, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self._buf) < HEADER.size:
            self._fill(deadline)
        (length,) = HEADER.unpack_from(self._buf)
        if length > self.max_frame:
            self._buf.clear()
            raise ProtocolError(
                f"incoming frame of {length} bytes exceeds the limit of {self.max_frame} bytes"
            )
        end = HEADER.size + length
        while len(self._buf) < end:
            self._fill(deadline)
        payload = bytes(self._buf[HEADER.size : end])
        del self._buf[:end]
        return decode(payload)
