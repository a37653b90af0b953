"""The worker's frame channel: after a reply it busy-polls stdin briefly (with the same
adaptive back-off as polar.wire.FramedChannel) before sleeping; frames must come through
intact either way, and EOF must still end the worker."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest

from polar import wire
from polar.sandboxes import worker


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        with contextlib.suppress(OSError):  # a test may have closed it already
            os.close(fd)


def later(delay: float, fd: int, data: bytes) -> threading.Timer:
    t = threading.Timer(delay, lambda: os.write(fd, data))
    t.start()
    return t


def test_without_spin_the_fd_stays_blocking(pipe) -> None:
    r, w = pipe
    ch = worker.Channel(r, w, 0.0)
    assert os.get_blocking(r)
    t = later(0.02, w, wire.pack_frame(["call", "act", [[0.5, 1.5]]]))
    assert ch.recv() == ["call", "act", [[0.5, 1.5]]]
    t.join()


def test_spin_backs_off_after_misses_and_resumes_after_a_hit(pipe) -> None:
    r, w = pipe
    ch = worker.Channel(r, w, 0.001)
    assert not os.get_blocking(r)
    t = later(0.05, w, wire.pack_frame(["ping"]))  # after the 1 ms spin: a miss, then select()
    assert ch.recv() == ["ping"]
    t.join()
    assert (ch._skip_spins, ch._backoff) == (1, 2)
    t = later(0.05, w, wire.pack_frame(["ping"]))  # this wait skips the spin
    assert ch.recv() == ["ping"]
    t.join()
    assert (ch._skip_spins, ch._backoff) == (0, 2)
    t = later(0.05, w, wire.pack_frame(["ping"]))  # spins again, misses again
    assert ch.recv() == ["ping"]
    t.join()
    assert (ch._skip_spins, ch._backoff) == (2, 4)
    ch._skip_spins, ch.spin_s = 0, 5.0  # a long spin the writer below lands in
    t = later(0.05, w, wire.pack_frame(["ping"]))
    assert ch.recv() == ["ping"]
    t.join()
    assert ch._backoff == 2  # a hit halves the back-off
    # A frame larger than one 64 KiB read (and than the pipe buffer) arrives in pieces.
    t = later(0.01, w, wire.pack_frame(["load", "x" * 200_000]))
    assert ch.recv() == ["load", "x" * 200_000]
    t.join()


def test_eof_ends_the_worker_loop_with_or_without_spin(pipe) -> None:
    r, w = pipe
    ch = worker.Channel(r, w, 0.0001)
    os.write(w, wire.pack_frame(["ping"])[:2])
    t = threading.Timer(0.02, os.close, (w,))
    t.start()
    with pytest.raises(EOFError):
        ch.recv()
    t.join()


def test_replies_go_out_whole(pipe) -> None:
    r, w = pipe
    out_r, out_w = os.pipe()
    try:
        ch = worker.Channel(r, out_w, 0.0001)
        ch.send_raw(worker.encode([0, [1.0, 2.0]], 1 << 20))
        assert wire.FramedChannel(out_r, w, 1 << 20).recv(timeout=5) == [0, [1.0, 2.0]]
    finally:
        os.close(out_r)
        os.close(out_w)
