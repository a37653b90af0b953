"""The out-of-process connector against real game processes: crashes, hangs, bad frames, cleanup.

Test games are small scripts written into tmp_path: `counter.py` uses `serve()`; `raw.py`
speaks the wire protocol by hand so it can misbehave in ways `serve()` never would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from polar.errors import HarnessError, ProtocolError
from polar.harnesses.connector import ConnectorConfig, ConnectorHarness
from polar.wire import HEADER, FramedChannel, FrameTooLarge, pack_frame

COUNTER_GAME = textwrap.dedent('''
    import os, subprocess, sys, time
    import numpy as np
    from gymnasium import spaces
    from polar.harnesses.connector import serve

    class Counter:
        """obs = [steps so far]; reward 1 per step; terminates at `length`."""
        action_meanings = ["inc", "dec"]
        max_steps = 50

        def __init__(self, length=5, hang_on_step=-1, big_obs_on_step=-1, spawn_child=False,
                     continuous=False):
            self.length, self.hang_on_step, self.big_obs_on_step = length, hang_on_step, big_obs_on_step
            self.observation_space = spaces.Box(0, 1000, (1,), np.int64)
            self.action_space = (spaces.Box(-1, 1, (2,), np.float32) if continuous
                                 else spaces.Discrete(2))
            print("this print must not corrupt the channel")  # goes to stderr
            if spawn_child:  # a grandchild that close() must not leave behind
                child = subprocess.Popen(["sleep", "60"])
                print(f"CHILD {child.pid}", file=sys.stderr, flush=True)

        def reset(self, seed=None, options=None):
            self.t = int(seed or 0)
            return np.array([self.t], np.int64), {"options": options or {}}

        def step(self, action):
            self.t += 1
            if self.t == self.hang_on_step:
                time.sleep(600)
            if self.t == self.big_obs_on_step:
                return np.zeros(1_000_000, np.int64), 0.0, False, False, {}
            return np.array([self.t], np.int64), 1.0, self.t >= self.length, False, {"t": self.t}

    if __name__ == "__main__":
        serve(Counter)
''')

# Answers spec properly, then misbehaves on the first step as told by argv[1].
RAW_GAME = textwrap.dedent('''
    import os, struct, sys
    from polar.wire import FramedChannel
    mode = sys.argv[1]
    ch = FramedChannel(0, 1)
    box = {"type": "box", "shape": [1], "dtype": "int64", "low": 0, "high": 9}
    while True:
        req = ch.recv()
        op = req["op"]
        if op == "spec" and mode == "badspec":
            ch.send({"ok": True, "observation_space": box})
        elif op == "spec":
            ch.send({"ok": True, "observation_space": box,
                     "action_space": {"type": "discrete", "n": 2, "start": 0}})
        elif op == "reset":
            import numpy as np
            ch.send({"ok": True, "obs": np.zeros(1, np.int64), "info": {}})
        elif mode == "garbage":
            os.write(1, struct.pack(">I", 3) + bytes([0xc1, 0xc1, 0xc1]))
        elif mode == "oversized":
            os.write(1, struct.pack(">I", 50_000_000) + b"x" * 100)
        elif mode == "not_a_map":
            ch.send([1, 2, 3])
        elif mode == "no_obs":
            ch.send({"ok": True, "reward": 0.0})
        elif mode == "exit3":
            print("fatal: the game gave up", file=sys.stderr, flush=True)
            sys.exit(3)
''')


@pytest.fixture
def games(tmp_path: Path) -> Path:
    (tmp_path / "counter.py").write_text(COUNTER_GAME)
    (tmp_path / "raw.py").write_text(RAW_GAME)
    return tmp_path


def make(base: Path, command: list[str], kwargs: dict | None = None, **cfg: object) -> ConnectorHarness:
    config = ConnectorConfig(command=command, **{"timeout_s": 2.0, "startup_timeout_s": 60.0,
                                                  "max_restarts": 2, **cfg})
    return ConnectorHarness(config, "test-game", base, kwargs)


def gone(pid: int) -> bool:
    """True when pid no longer runs (absent, or a zombie some other parent has yet to reap)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def live_children() -> set[int]:
    """Processes this test process started that still run (zombies included: unreaped)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(entry))
    return found


def wait_gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if gone(pid):
            return True
        time.sleep(0.02)
    return False


def test_spec_round_trip_reset_step_and_prints_do_not_corrupt(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"length": 3}) as h:
        assert h.spec.id == "test-game"
        assert h.spec.action_meanings == ["inc", "dec"]
        assert h.spec.max_steps == 50
        assert h.spec.observation_space.type == "box"
        assert h.action_space.n == 2
        obs, info = h.reset(seed=7, options={"level": "easy"})
        assert obs.dtype == np.int64 and obs.tolist() == [7]
        assert info == {"options": {"level": "easy"}}
        h.reset(seed=0)
        results = [h.step(np.int64(0)) for _ in range(3)]
        assert [r[0].tolist() for r in results] == [[1], [2], [3]]
        assert [r[2] for r in results] == [False, False, True]
        assert results[-1][4] == {"t": 3}
        assert h.ping() < 2.0
        assert "must not corrupt" in h.log_path.read_text()


def test_kill_9_mid_episode_truncates_with_cause_and_next_reset_works(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"length": 100}) as h:
        h.reset(seed=0)
        obs, *_ = h.step(0)
        pid = h.pid
        os.kill(pid, signal.SIGKILL)
        obs2, reward, terminated, truncated, info = h.step(0)
        assert truncated and not terminated and reward == 0.0
        assert "game process exited with signal 9" in info["harness_error"]
        assert obs2.tolist() == obs.tolist()  # the last observation the game sent
        assert h.pid is None and gone(pid)
        with pytest.raises(HarnessError, match="call reset"):
            h.step(0)
        obs, _ = h.reset(seed=3)
        assert obs.tolist() == [3] and h.pid != pid and h.restarts == 1
        assert h.step(0)[0].tolist() == [4]


def test_a_game_that_stops_answering_is_cut_short_within_the_timeout(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"length": 100, "hang_on_step": 2}, timeout_s=0.5) as h:
        h.reset(seed=0)
        h.step(0)
        pid = h.pid
        t0 = time.monotonic()
        _, _, terminated, truncated, info = h.step(0)
        assert time.monotonic() - t0 < 3.0
        assert truncated and not terminated
        assert info["harness_error"] == "no reply within 0.5 s to step"
        assert gone(pid)
        obs, _ = h.reset(seed=10)  # step 2 of the new process is t=12: no hang
        assert h.step(0)[0].tolist() == [11]


def test_repeated_failures_raise_after_max_restarts(games: Path) -> None:
    h = make(games, ["python", "counter.py"], {"length": 100}, max_restarts=1)
    try:
        for _ in range(2):  # two consecutive failures: the first restart is allowed...
            h.reset()
            os.kill(h.pid, signal.SIGKILL)
            assert h.step(0)[3]
        with pytest.raises(HarnessError, match=r"failed 2 times in a row \(max_restarts=1\).*signal 9"):
            h.reset()  # ...the second is not
    finally:
        h.close()


def test_a_successful_step_clears_the_failure_count(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"length": 100}, max_restarts=1) as h:
        for _ in range(4):
            h.reset()
            assert not h.step(0)[3]  # a healthy step in each process
            os.kill(h.pid, signal.SIGKILL)
            assert h.step(0)[3]
        assert h.restarts == 3


def test_malformed_reply_frame_is_a_clear_protocol_error(games: Path) -> None:
    with make(games, ["python", "raw.py", "garbage"]) as h:
        h.reset()
        with pytest.raises(ProtocolError, match="test-game: bad frame from the game in reply to step: malformed frame"):
            h.step(0)
        assert h.pid is None  # the stream cannot be trusted any more: the process is gone


def test_oversized_reply_frame_is_a_clear_protocol_error(games: Path) -> None:
    with make(games, ["python", "raw.py", "oversized"], max_frame_bytes=65536) as h:
        h.reset()
        with pytest.raises(FrameTooLarge, match="incoming frame of 50000000 bytes exceeds the limit of 65536 bytes"):
            h.step(0)


def test_reply_that_is_not_a_map_is_a_protocol_error(games: Path) -> None:
    with make(games, ["python", "raw.py", "not_a_map"]) as h:
        h.reset()
        with pytest.raises(ProtocolError, match="reply to step must be a map with 'ok', got list"):
            h.step(0)
        with pytest.raises(HarnessError, match="call reset"):
            h.step(0)  # the episode ended with the process
    with make(games, ["python", "raw.py", "no_obs"]) as h:
        h.reset()
        with pytest.raises(ProtocolError, match="test-game: the reply to step lacks 'obs'"):
            h.step(0)


def test_invalid_spec_reply_is_a_protocol_error_and_leaves_no_process(games: Path) -> None:
    before = live_children()
    with pytest.raises(ProtocolError, match=r"test-game: the game's spec reply is invalid: \('action_space',\): Field required"):
        make(games, ["python", "raw.py", "badspec"])
    assert live_children() <= before


def test_exit_code_and_last_stderr_line_name_the_cause(games: Path) -> None:
    with make(games, ["python", "raw.py", "exit3"]) as h:
        h.reset()
        info = h.step(0)[4]
        assert info["harness_error"] == ("game process exited with code 3 during step; "
                                         "last output: fatal: the game gave up")


def test_oversized_request_is_refused_before_sending_and_the_game_lives_on(games: Path) -> None:
    with make(games, ["python", "counter.py"], max_frame_bytes=65536) as h:
        pid = h.pid
        with pytest.raises(FrameTooLarge, match=r"test-game: cannot send reset: frame of \d+ bytes exceeds the limit of 65536"):
            h.reset(options={"blob": "x" * 100_000})
        assert h.pid == pid
        assert h.reset(seed=1)[0].tolist() == [1]


def test_oversized_observation_is_reported_by_the_game_side(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"big_obs_on_step": 1}, max_frame_bytes=65536) as h:
        h.reset()
        with pytest.raises(HarnessError, match="cannot send the reply: frame of 8000.* exceeds the limit of 65536"):
            h.step(0)
        assert h.step(0)[0].tolist() == [2]  # the game is still fine


def test_serve_answers_malformed_and_oversized_requests(games: Path) -> None:
    """The other direction: bytes a buggy harness might send reach serve() directly."""
    env = {**os.environ, "POLAR_CONNECTOR_MAX_FRAME": "65536"}
    proc = subprocess.Popen([sys.executable, "counter.py"], cwd=games, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ch = FramedChannel(proc.stdout.fileno(), proc.stdin.fileno(), 1 << 20)
        ch.send_frame(HEADER.pack(2) + b"\xc1\xc1")
        reply = ch.recv(30)
        assert reply["ok"] is False and reply["error"].startswith("bad request frame: malformed frame")
        ch.send({"op": "step", "action": 0})
        assert ch.recv(10)["error"] == "step before spec: the first request must be 'spec'"
        ch.send({"op": "teleport"})
        assert "unknown op 'teleport'" in ch.recv(10)["error"]
        ch.send({"op": "spec", "kwargs": {"lenght": 3}})
        assert "unexpected keyword argument 'lenght'" in ch.recv(10)["error"]
        ch.send_frame(HEADER.pack(10_000_000) + b"x" * 10)
        reply = ch.recv(10)
        assert reply["error"] == ("bad request frame: incoming frame of 10000000 bytes exceeds "
                                  "the limit of 65536 bytes")
        assert proc.wait(timeout=10) == 0  # the stream is out of step: serve() ends
        assert b"closing the connection" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_game_errors_are_harness_errors_and_bad_kwargs_fail_at_start(games: Path) -> None:
    with make(games, ["python", "counter.py"]) as h:
        h.reset()
        with pytest.raises(HarnessError, match=r"the game failed on step: step: action 7 is not in the action space Discrete\(2\)"):
            h.step(7)
        assert h.step(1)[0].tolist() == [1]
    with pytest.raises(HarnessError, match="unexpected keyword argument 'lenght'"):
        make(games, ["python", "counter.py"], {"lenght": 3})


def test_start_failures_are_clear(games: Path) -> None:
    with pytest.raises(HarnessError, match="cannot start the game process .*no-such-game"):
        make(games, ["./no-such-game"])
    with pytest.raises(HarnessError, match="failed to start: game process exited with code 1 during spec; last output: ModuleNotFoundError"):
        make(games, ["python", "-c", "import no_such_module_xyz"])
    with pytest.raises(HarnessError, match="failed to start: no reply within 0.5 s to spec"):
        make(games, ["python", "-c", "import time; time.sleep(30)"], startup_timeout_s=0.5)


def test_close_leaves_no_process_behind_even_grandchildren(games: Path) -> None:
    h = make(games, ["python", "counter.py"], {"spawn_child": True})
    pid = h.pid
    log = h.log_path
    end = time.monotonic() + 10
    while "CHILD" not in log.read_text() and time.monotonic() < end:
        time.sleep(0.02)
    child = int(log.read_text().split("CHILD ")[1].split()[0])
    assert not gone(child)
    h.close()
    assert gone(pid) and wait_gone(child)
    assert not log.parent.exists()  # the work folder (log, socket) is removed
    h.close()  # idempotent
    with pytest.raises(HarnessError, match="closed"):
        h.step(0)
    with pytest.raises(HarnessError, match="test-game: the harness is closed"):
        h.reset()


def test_dropped_harness_and_dead_parent_leave_no_process(games: Path) -> None:
    h = make(games, ["python", "counter.py"])
    pid = h.pid
    del h  # no close(): the finalizer must still reap the game
    import gc

    gc.collect()
    assert gone(pid)
    # A parent killed outright: the game reads EOF and exits by itself.
    parent = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import os
            from pathlib import Path
            from polar.harnesses.connector import ConnectorConfig, ConnectorHarness
            h = ConnectorHarness(ConnectorConfig(command=["python", "counter.py"]), "t", Path({str(games)!r}))
            print(h.pid, flush=True)
            os.kill(os.getpid(), 9)
        """)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "TMPDIR": str(games)})  # its work folder cannot be cleaned: keep it here
    assert wait_gone(int(parent.stdout.split()[0]))


@pytest.mark.parametrize("transport", ["stdio", "unix"])
def test_both_transports_give_the_same_rollout(games: Path, transport: str) -> None:
    with make(games, ["python", "counter.py"], {"length": 4}, transport=transport) as h:
        h.reset(seed=0)
        rollout = [h.step(0)[:4] for _ in range(4)]
        assert [(o.tolist(), r, te, tr) for o, r, te, tr in rollout] == [
            ([1], 1.0, False, False), ([2], 1.0, False, False),
            ([3], 1.0, False, False), ([4], 1.0, True, False)]


def test_unix_transport_survives_kill_9(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"length": 100}, transport="unix") as h:
        h.reset()
        os.kill(h.pid, signal.SIGKILL)
        info = h.step(0)[4]
        assert "game process exited with signal 9" in info["harness_error"]
        assert h.reset(seed=2)[0].tolist() == [2]


def test_the_spec_step_limit_holds_even_if_the_game_ignores_it(games: Path) -> None:
    with make(games, ["python", "counter.py"], {"length": 1000}) as h:
        h.reset()
        flags = [h.step(0)[3] for _ in range(50)]
        assert flags == [False] * 49 + [True]


def test_step_request_frames_match_the_wire_format(games: Path) -> None:
    """Cached step frames are byte-identical to what polar.wire would send."""
    with make(games, ["python", "counter.py"]) as h:
        h.reset()
        h.step(np.int64(1))
        assert h._step_frames[1] == pack_frame({"op": "step", "action": 1})


def test_box_actions_and_the_env_checker(games: Path) -> None:
    from gymnasium.utils.env_checker import check_env

    from polar.harnesses.base import HarnessEnv

    with make(games, ["python", "counter.py"], {"continuous": True, "length": 3}) as h:
        assert h.action_space.shape == (2,)
        check_env(HarnessEnv(h), skip_render_check=True)
        h.reset(seed=0)
        assert h.step(np.array([0.5, -0.5], np.float32))[0].tolist() == [1]
        with pytest.raises(HarnessError, match="is not in the action space Box"):
            h.step(np.array([5.0, 0.0], np.float32))
