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


class ChannelClosed(ProtocolError):
    """The peer closed its end (it exited or crashed)."""


class ChannelTimeout(ProtocolError):
    """The peer did not answer within the deadline."""


# -- the codec -------------------------------------------------------------------------------
# Speed matters (the connector does one round trip per env step): the part of an array's
# payload that depends only on its dtype and shape (the array header, the dtype string, the
# shape, the bin header) is cached, so an array costs one tobytes() and one concatenation.
# tests/test_wire.py checks the bytes against plain msgpack.
_ALLOWED_KINDS = frozenset("biufc?")
_dtype_cache: dict[str, np.dtype] = {}
_prefix_cache: dict[tuple[np.dtype, tuple[int, ...]], bytes] = {}
_CACHE_LIMIT = 256


def _bin_header(n: int) -> bytes:
    if n < 1 << 8:
        return b"\xc4" + n.to_bytes(1, "big")
    if n < 1 << 16:
        return b"\xc5" + n.to_bytes(2, "big")
    return b"\xc6" + n.to_bytes(4, "big")


def _ndarray_prefix(arr: np.ndarray) -> bytes:
    """msgpack of [dtype_str, shape, <bin header>]: everything in the payload but the data."""
    key = (arr.dtype, arr.shape)
    prefix = _prefix_cache.get(key)
    if prefix is None:
        if arr.dtype.kind not in _ALLOWED_KINDS:
            raise TypeError(f"cannot send a numpy array of dtype {arr.dtype}")
        prefix = (b"\x93" + msgpack.packb(arr.dtype.str) + msgpack.packb(list(arr.shape))
                  + _bin_header(arr.nbytes))
        if len(_prefix_cache) < _CACHE_LIMIT:
            _prefix_cache[key] = prefix
    return prefix


# ExtType is a namedtuple whose __new__ re-checks its arguments in Python (~1 us); ours are
# known good, so build the tuple directly. The byte-identity tests cover this.
_ExtType = msgpack.ExtType
_new_tuple = tuple.__new__


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        prefix = _ndarray_prefix(obj)
        return _new_tuple(_ExtType, (NDARRAY_EXT, prefix + obj.tobytes()))  # tobytes(): C order
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    raise TypeError(f"cannot send a value of type {type(obj).__name__}")


def _ext_hook(code: int, data: bytes) -> Any:
    if code != NDARRAY_EXT:
        raise ProtocolError(f"unknown msgpack extension type {code}")
    try:
        dtype_str, shape, raw = msgpack.unpackb(data, raw=False)
        dtype = _dtype_cache.get(dtype_str)
        if dtype is None:
            dtype = np.dtype(dtype_str)
            if dtype.kind not in _ALLOWED_KINDS:
                raise ProtocolError(f"refusing ndarray of dtype {dtype}")
            if len(_dtype_cache) < 64:
                _dtype_cache[dtype_str] = dtype
        need = math.prod(shape) * dtype.itemsize
        if need != len(raw):
            raise ProtocolError(f"ndarray payload has {len(raw)} bytes, shape {shape} needs {need}")
        # A fresh writable array over a bytearray copy: half the cost of frombuffer().copy().
        return np.ndarray(shape, dtype, bytearray(raw))
    except ProtocolError:
        raise
    except Exception as err:  # malformed extension payload from the peer
        raise ProtocolError(f"malformed ndarray payload: {type(err).__name__}: {err}") from None


class FrameTooLarge(ProtocolError):
    """A frame over the size limit: refused before sending, or announced by an incoming
    header (then the stream cannot be resynced). Callers catch it by type."""


class FrameEncoder:
    """Header + msgpack body. Keep one per channel: a Packer is not thread-safe, and reusing
    one saves its set-up on every message."""

    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self._packer = msgpack.Packer(default=_default, use_bin_type=True)

    def __call__(self, obj: Any) -> bytes:
        try:
            body = self._packer.pack(obj)
        except (TypeError, ValueError, OverflowError) as err:
            self._packer.reset()
            raise ProtocolError(f"cannot encode message: {err}") from None
        if len(body) > self.max_frame:
            raise FrameTooLarge(f"frame of {len(body)} bytes exceeds the limit of {self.max_frame} bytes")
        return HEADER.pack(len(body)) + body


def decode(payload: bytes | memoryview) -> Any:
    try:
        return msgpack.unpackb(payload, raw=False, ext_hook=_ext_hook, strict_map_key=False)
    except ProtocolError:
        raise
    except Exception as err:
        raise ProtocolError(f"malformed frame: {type(err).__name__}: {err}") from None


def pack_frame(obj: Any, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """One frame, header included (a fresh encoder: safe from any thread)."""
    return FrameEncoder(max_frame)(obj)


def encode(obj: Any) -> bytes:
    """Serialise a message body (no header)."""
    return pack_frame(obj)[HEADER.size:]


# -- the channel: lock-step request/reply over a pipe pair or one socket ------------------------
# Used by the harness connector (both ends) and the sandbox hosts. The sandbox worker keeps a
# stdlib-only copy of the receiving half (polar/sandboxes/worker.py: the container image has no
# msgpack); tests/sandboxes/test_worker_channel.py holds the two to the same frames.
# On an idle machine a blocking pipe round trip costs 70-100 us, most of it waking a sleeping
# process on another CPU; a peer that answers within a few tens of microseconds is caught by a
# short busy-poll instead.
_READ_SIZE = 1 << 16  # 1 MiB reads cost ~15x more per call (an mmap per read)
_MAX_BACKOFF = 1024
yield_cpu = os.sched_yield
_HEADER_SIZE = HEADER.size
_unpack_header = HEADER.unpack_from


class FramedChannel:
    """Framed msgpack over non-blocking fds (a pipe pair, or one socket for both).

    `recv` blocks at most `timeout` seconds and raises ChannelTimeout, ChannelClosed,
    FrameTooLarge or ProtocolError. With `spin_s` > 0 it first polls the fd for up to that
    long (cheap while the peer is about to answer), then sleeps in select(). `send` never
    blocks past its deadline either, so a peer that stops reading cannot hang us on a full
    pipe. Reads are buffered: a burst of small frames costs one syscall.
    """

    def __init__(self, read_fd: int, write_fd: int, max_frame: int = DEFAULT_MAX_FRAME,
                 spin_s: float = 0.0) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.max_frame = max_frame
        self.spin_s = spin_s
        self.encode_frame = FrameEncoder(max_frame)  # obj -> frame bytes (raises FrameTooLarge)
        self._buf = bytearray()
        self._skip_spins = 0  # waits left before the next spin attempt
        self._backoff = 1
        os.set_blocking(read_fd, False)
        if write_fd != read_fd:
            os.set_blocking(write_fd, False)

    # -- sending -------------------------------------------------------------------------
    def send(self, obj: Any, timeout: float | None = None) -> None:
        self.send_frame(self.encode_frame(obj), timeout)

    def send_frame(self, frame: bytes, timeout: float | None = None) -> None:
        """Write one already packed frame (header included)."""
        try:
            n = os.write(self.write_fd, frame)
        except BlockingIOError:
            n = 0
        except (BrokenPipeError, ConnectionResetError):
            raise ChannelClosed("peer closed the channel") from None
        if n == len(frame):
            return
        # Slow path: the pipe is full (a big frame, or a peer that stopped reading).
        deadline = None if timeout is None else time.monotonic() + timeout
        data = memoryview(frame)[n:]
        while data:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise ChannelTimeout("peer stopped reading before the deadline")
            _, ready, _ = select.select([], [self.write_fd], [], wait)
            if not ready:
                continue
            try:
                n = os.write(self.write_fd, data)
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise ChannelClosed("peer closed the channel") from None
            data = data[n:]

    # -- receiving -----------------------------------------------------------------------
    def _read_some(self, deadline: float | None) -> bytes:
        fd = self.read_fd
        try:
            return os.read(fd, _READ_SIZE)
        except BlockingIOError:
            pass
        except ConnectionResetError:
            return b""
        if self.spin_s > 0:
            if self._skip_spins:
                self._skip_spins -= 1
            else:
                chunk, hit = self._spin_read(fd)
                # A miss: the peer is slow or the machine is busy, and spinning would only
                # steal its CPU. Sleep for the next `backoff` waits; misses double the
                # back-off, hits halve it, so a mostly-missing spin stays mostly off.
                if hit:
                    self._backoff = max(self._backoff // 2, 1)
                else:
                    self._skip_spins = self._backoff
                    self._backoff = min(self._backoff * 2, _MAX_BACKOFF)
                if chunk is not None:
                    return chunk
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise ChannelTimeout("no answer before the deadline")
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                continue
            try:
                return os.read(fd, _READ_SIZE)
            except BlockingIOError:  # spurious wake-up
                continue
            except ConnectionResetError:
                return b""

    def _spin_read(self, fd: int) -> tuple[bytes | None, bool]:
        """(what arrived while spinning or None, whether that was a hit). An answer that came
        only after a yield handed the CPU to another process for a time slice is a miss: that
        wait is what sleeping in select() avoids."""
        now = time.perf_counter
        spin_end = now() + self.spin_s
        while now() < spin_end:
            # Yield between polls: on a busy machine the peer we wait for may need this very
            # CPU, and a bare spin would hold it for a whole time slice.
            yield_cpu()
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                chunk = b""
            return chunk, now() <= spin_end
        return None, False

    def _fill(self, deadline: float | None) -> None:
        chunk = self._read_some(deadline)
        if not chunk:
            raise ChannelClosed("peer closed the channel")
        self._buf += chunk

    def recv(self, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        buf = self._buf
        if not buf:
            # Fast path: one read usually brings exactly one whole frame; decode it in place.
            chunk = self._read_some(deadline)
            if not chunk:
                raise ChannelClosed("peer closed the channel")
            if len(chunk) >= _HEADER_SIZE:
                (length,) = _unpack_header(chunk)
                if length == len(chunk) - _HEADER_SIZE and length <= self.max_frame:
                    return decode(memoryview(chunk)[_HEADER_SIZE:])
            buf += chunk
        while len(buf) < _HEADER_SIZE:
            self._fill(deadline)
        (length,) = _unpack_header(buf)
        if length > self.max_frame:
            buf.clear()
            raise FrameTooLarge(
                f"incoming frame of {length} bytes exceeds the limit of {self.max_frame} bytes"
            )
        end = _HEADER_SIZE + length
        while len(buf) < end:
            self._fill(deadline)
        payload = bytes(buf[_HEADER_SIZE:end])
        del buf[:end]
        return decode(payload)

    def pending(self) -> bool:
        """Whether bytes the peer sent are already buffered (used to spot stray output)."""
        return bool(self._buf)
