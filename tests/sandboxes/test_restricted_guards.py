"""The restricted policy's guards, checked in process against the worker's loader.

The guards are Polar's own faster versions of RestrictedPython's (bound once per worker);
these tests pin down that they keep RestrictedPython's meaning: refused attribute names,
writes only into dict/list, `x op= y` never in place, and the worker's frame reader.
"""

from __future__ import annotations

import os
import threading

import pytest

from polar import wire
from polar.sandboxes import worker


@pytest.fixture(scope="module")
def load():
    loader = worker.restricted_loader(None)

    def run(source: str) -> dict:
        ns: dict = {"__name__": "policy"}
        loader(source, ns)
        return ns

    return run


def test_getattr_refuses_what_safer_getattr_refuses(load) -> None:
    ns = load(
        "import math\n"
        "def ok():\n"
        "    return [math.pi, getattr(math, 'e'), getattr(math, 'nope', 7), 'ab'.upper()]\n"
        "def fmt():\n"
        "    return getattr('{0}', 'format')\n"
        "def fmt_map():\n"
        "    return getattr('{x}', 'format_map')\n"
        "def under():\n"
        "    return getattr(math, '_' + 'x', 1)\n"
        "def frame():\n"
        "    g = (i for i in [1])\n"
        "    return getattr(g, 'gi' + '_frame')\n"
        "def not_str():\n"
        "    return getattr(math, 3)\n"
        "def too_many():\n"
        "    return getattr(math, 'pi', 1, 2)\n"
    )
    import math

    assert ns["ok"]() == [math.pi, math.e, 7, "AB"]
    with pytest.raises(NotImplementedError, match="format"):
        ns["fmt"]()
    with pytest.raises(NotImplementedError, match="format"):
        ns["fmt_map"]()
    with pytest.raises(AttributeError, match="invalid attribute name"):
        ns["under"]()
    with pytest.raises(AttributeError, match="restricted name"):
        ns["frame"]()
    with pytest.raises(TypeError, match="must be str"):
        ns["not_str"]()
    with pytest.raises(TypeError, match="at most 3"):
        ns["too_many"]()


def test_writes_only_into_dict_and_list(load) -> None:
    ns = load(
        "import collections\n"
        "def ok():\n"
        "    d = {}\n"
        "    d['a'] = 1\n"
        "    xs = [0, 0]\n"
        "    xs[1] = 2\n"
        "    return [d, xs]\n"
        "def other():\n"
        "    d = collections.OrderedDict()\n"
        "    d['a'] = 1\n"
        "    return 0\n"
    )
    assert ns["ok"]() == [{"a": 1}, [0, 2]]
    with pytest.raises(TypeError, match="item or slice assignment"):
        ns["other"]()


def test_augmented_assignment_is_never_in_place(load) -> None:
    ns = load(
        "def f():\n"
        "    a = [1]\n"
        "    b = a\n"
        "    b += [2]\n"
        "    n = 7\n"
        "    n += 3; n -= 1; n *= 4; n //= 3; n %= 7; n **= 2; n <<= 2; n >>= 1\n"
        "    n |= 1; n &= 0xff; n ^= 2\n"
        "    x = 1.0\n"
        "    x /= 4\n"
        "    return [a, b, n, x]\n"
    )
    n = 7
    n += 3
    n -= 1
    n *= 4
    n //= 3
    n %= 7
    n **= 2
    n <<= 2
    n >>= 1
    n |= 1
    n &= 0xFF
    n ^= 2
    assert ns["f"]() == [[1], [1, 2], n, 0.25]


def test_imports_stay_on_the_allowlist(load) -> None:
    ns = load("def f():\n    import os\n    return 1\n")
    with pytest.raises(ImportError, match="not allowed"):
        ns["f"]()


def test_channel_reads_frames_larger_than_one_read() -> None:
    """The worker reads 64 KiB at a time; a 300 KB frame (a large source) still arrives whole,
    and the frame after it is not lost."""
    r, w = os.pipe()
    big = ["load", "x" * 300_000]
    data = wire.pack_frame(big) + wire.pack_frame(["call", "act", [[0.5, -1.25, 3.0, 4.0]]])
    writer = threading.Thread(target=lambda: (os.write(w, data), os.close(w)))
    writer.start()
    try:
        chan = worker.Channel(r, -1)
        assert chan.recv() == big
        assert chan.recv() == ["call", "act", [[0.5, -1.25, 3.0, 4.0]]]
        with pytest.raises(EOFError):
            chan.recv()
    finally:
        writer.join()
        os.close(r)
