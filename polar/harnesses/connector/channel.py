"""A `FramedChannel` tuned for lock-step request/reply: non-blocking fds, a short busy-poll
before sleeping, deadlines on sends as well as receives, and a zero-copy path for the
common case of one whole frame per read.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any

from polar.errors import ProtocolError
from polar.wire import HEADER, ChannelClosed, ChannelTimeout, FramedChannel, decode

_READ_SIZE = 1 << 16
_MAX_BACKOFF = 1024
yield_cpu = os.sched_yield
_HEADER_SIZE = HEADER.size
_unpack_header = HEADER.unpack_from


class FrameTooLarge(ProtocolError):
    """A frame header announced more bytes than the limit; the stream cannot be resynced."""


class SpinChannel(FramedChannel):
    """Framed msgpack over non-blocking fds (a pipe pair or one socket).

    `recv` first polls the fd for up to `spin_s` seconds (cheap while the peer is about to
    answer), then sleeps in select() until the deadline. `send` never blocks past its
    deadline either, so a peer that stops reading cannot hang us on a full pipe.
    """

    def __init__(self, read_fd: int, write_fd: int, max_frame: int, spin_s: float = 0.0) -> None:
        super().__init__(read_fd, write_fd, max_frame)
        self.spin_s = spin_s
        self._skip_spins = 0  # waits left before the next spin attempt
        self._backoff = 1
        os.set_blocking(read_fd, False)
        if write_fd != read_fd:
            os.set_blocking(write_fd, False)

    # -- sending -------------------------------------------------------------------------
    def send(self, obj: Any, timeout: float | None = None) -> None:
        self.send_frame(self._encode(obj), timeout)

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
                chunk = self._spin_read(fd)
                if chunk is not None:
                    self._backoff = max(self._backoff // 2, 1)
                    return chunk
                # A miss: the peer is slow or the machine is busy, and spinning would only
                # steal its CPU. Sleep for the next `backoff` waits; misses double the
                # back-off, hits halve it, so a mostly-missing spin stays mostly off.
                self._skip_spins = self._backoff
                self._backoff = min(self._backoff * 2, _MAX_BACKOFF)
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

    def _spin_read(self, fd: int) -> bytes | None:
        now = time.perf_counter
        spin_end = now() + self.spin_s
        while now() < spin_end:
            # Yield between polls: on a busy machine the peer we wait for may need this very
            # CPU, and a bare spin would hold it for a whole time slice.
            yield_cpu()
            try:
                return os.read(fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                return b""
        return None

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
