"""The sandbox contract on every backend: load, call, close, limits and typed errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from polar.sandboxes.base import (
    SandboxCodeError,
    SandboxError,
    SandboxLimits,
    SandboxMemoryError,
    SandboxOutputError,
    SandboxTimeout,
    SandboxViolation,
    make_sandbox,
    to_plain,
)

BACKENDS = ["restricted", "process", "docker"]
LIMITS = SandboxLimits(timeout_s=1.0, load_timeout_s=20, memory_mb=128, output_bytes=4096)

POLICY = """
import math
def act(obs):
    return 1 if obs[2] + 0.1 * obs[3] > 0 else 0
def echo(*args):
    return list(args)
def spin():
    while True:
        pass
def big():
    return "x" * 10000
def fail():
    raise ValueError("line one\\nline two")
"""


@pytest.fixture(params=BACKENDS)
def box(request):
    kwargs = {}
    if request.param == "docker":
        request.getfixturevalue("docker_engine")
    sb = make_sandbox(request.param, LIMITS, **kwargs)
    yield sb
    sb.close()


def test_load_call_plain_data(box) -> None:
    assert box.load(POLICY) == ["act", "big", "echo", "fail", "spin"]
    assert box.call("act", np.array([0.0, 0.0, 0.5, 0.0], dtype=np.float32)) == 1
    assert box.call("act", [0.0, 0.0, -0.5, 0.0]) == 0
    data = {"a": [1, 2.5, "s", None, True], "b": {"c": []}}
    assert box.call("echo", data, np.int64(3)) == [data, 3]


def test_typed_errors_and_recovery(box) -> None:
    box.load(POLICY)
    with pytest.raises(SandboxCodeError) as err:
        box.call("fail")
    assert err.value.type_name == "ValueError" and "\n" not in str(err.value)
    with pytest.raises(SandboxOutputError, match="output limit of 4096 bytes"):
        box.call("big")
    with pytest.raises(SandboxCodeError, match="NameError"):
        box.call("nope")
    assert box.call("act", [0, 0, 1, 0]) == 1  # the worker survived all of those
    t0 = time.monotonic()
    with pytest.raises(SandboxTimeout, match="wall-clock limit of 1 s"):
        box.call("spin")
    assert time.monotonic() - t0 < 5
    with pytest.raises(SandboxError, match="load"):
        box.call("act", [0, 0, 1, 0])  # killed: must be loaded again
    box.load(POLICY)
    assert box.call("act", [0, 0, 1, 0]) == 1


def test_memory_limit(box) -> None:
    box.load("def hog():\n    return len('x' * (512 * 1024 * 1024))\n")
    with pytest.raises(SandboxMemoryError):
        box.call("hog")


def test_source_size_limit(box) -> None:
    with pytest.raises(SandboxViolation, match="max_source_bytes"):
        box.load("x = 1\n" * 50_000)


def test_only_plain_data_goes_in() -> None:
    with pytest.raises(SandboxError, match="cannot pass a object"):
        to_plain([object()])
    with pytest.raises(SandboxError, match="int key"):
        to_plain({1: 2})
    assert to_plain((np.arange(3), {"k": np.float32(0.5)})) == [[0, 1, 2], {"k": 0.5}]


def test_restricted_policy_refuses_early() -> None:
    with make_sandbox("restricted", LIMITS) as box:
        for src, what in [("import os\ndef f():\n    return 1\n", "import of os"),
                          ("def f(x):\n    return x.__class__\n", "_"),
                          ("def f():\n    return open('/etc/passwd').read()\n", "open")]:
            with pytest.raises(SandboxError, match=what):
                box.load(src)
                box.call("f", 1) if "x" in src else box.call("f")


def test_unknown_backend() -> None:
    with pytest.raises(SandboxError, match="unknown sandbox backend 'vm'"):
        make_sandbox("vm")


def test_pool_acquire_is_fast(docker_engine) -> None:
    from polar.sandboxes.docker import ContainerPool

    with ContainerPool(LIMITS, size=1, client=docker_engine) as pool:
        pool.wait_ready()
        t0 = time.perf_counter()
        with make_sandbox("docker", LIMITS, pool=pool) as box:
            box.load(POLICY)
            assert box.call("act", [0, 0, 1, 0]) == 1
        assert time.perf_counter() - t0 < 0.5  # no container start on this path


def test_total_cpu_limit_is_enforced_by_the_kernel() -> None:
    limits = SandboxLimits(cpu_s=1, timeout_s=10)
    with make_sandbox("process", limits) as box:
        box.load("def spin():\n    while True:\n        pass\n")
        with pytest.raises(SandboxTimeout, match="CPU time limit of 1 s"):
            box.call("spin")


def test_a_large_source_within_max_source_bytes_loads() -> None:
    """Requests are not bound by the reply limit (output_bytes) the channel enforces."""
    source = "DATA = " + repr("x" * 150_000) + "\ndef act(obs):\n    return len(DATA)\n"
    with make_sandbox("process", LIMITS) as box:
        box.load(source)
        assert box.call("act", []) == 150_000
