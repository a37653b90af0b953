"""The worker's own msgpack subset must stay byte-compatible with polar.wire (real msgpack)."""

from __future__ import annotations

import pytest

from polar import wire
from polar.sandboxes import worker

VALUES = [
    None, True, False, 0, 1, 127, 128, 255, 256, 65535, 65536, 2**32, 2**63 - 1, 2**64 - 1,
    -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**63), 0.0, -1.5, 1e300,
    "", "a", "é" * 40, "x" * 300, "y" * 70000, b"", b"\x00\xff" * 200,
    [], list(range(20)), list(range(70000)), {}, {"a": 1, "b": [1, 2, {"c": None}]},
    {str(i): i for i in range(20)}, [[[[["deep"]]]]],
    # float lists take a one-struct-call path in the decoder; mixed ones must not
    [0.5, -1.25, 3.0, 4.0], [1e-300] * 70000, [0.5, 1, 2.5], [1, 0.5], [[0.1, 0.2], [0.3]],
    [0.5, "x" * 20, 0.25], {"obs": [0.0, -0.0, 2.5]},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_roundtrip_both_ways(value: object) -> None:
    ours = worker.encode(value, 1 << 30)
    assert wire.decode(ours) == value
    assert worker.decode(wire.encode(value)) == value


def test_encoder_refuses_what_is_not_plain_data() -> None:
    class S(str):
        pass

    for bad in [S("x"), {1: 2}, object(), (x for x in []), {"k": {3.5}}, 2**64]:
        with pytest.raises(worker.NotPlainData):
            worker.encode(bad, 1 << 20)


def test_encoder_nesting_limit() -> None:
    def nest(k: int, leaf: object) -> object:
        for _ in range(k):
            leaf = [leaf]
        return leaf

    assert wire.decode(worker.encode(nest(64, 1), 1 << 20)) == nest(64, 1)
    assert wire.decode(worker.encode(nest(64, []), 1 << 20)) == nest(64, [])
    for deeper in (nest(65, 1), nest(65, [])):
        with pytest.raises(worker.NotPlainData, match="64 levels"):
            worker.encode(deeper, 1 << 20)


def test_encoder_stops_at_the_output_limit() -> None:
    with pytest.raises(worker.OutputTooLarge):
        worker.encode(["x" * 100] * 100, 5000)
