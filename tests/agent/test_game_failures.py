"""What the live trace and the record say when the game itself fails under policy code: a game
process killed mid-run is a failed outcome (never "ok"), and a game that raises on `step`
shows where it raised (its traceback), through the real CLI, connector and sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from polar.errors import HarnessError
from polar.harnesses.registry import make_harness
from tests.llm_server import Reply, ScriptedLLMServer, write_profile

# A game that never reports success (so a verdict cannot hide a failure) and fails on its
# third step: killed by SIGKILL (as by the OOM killer), or raising from deep in its rules.
GAME = textwrap.dedent('''
    import os, signal
    import numpy as np
    from gymnasium import spaces
    from polar.harnesses.connector import serve

    def rules(t, how):
        if t == 3 and how == "raise":
            raise ValueError("the wall at (2, 3) has no type")
        if t == 3 and how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)

    class Walker:
        def __init__(self, how="kill"):
            self.how = how
            self.observation_space = spaces.Box(0, 100, (1,), np.int64)
            self.action_space = spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.t = 0
            return np.array([0], np.int64), {}

        def step(self, action):
            self.t += 1
            rules(self.t, self.how)
            return np.array([self.t], np.int64), 0.0, False, self.t >= 50, {}

    if __name__ == "__main__":
        serve(Walker)
''')


def _spec(tmp_path: Path, how: str) -> Path:
    (tmp_path / "walker.py").write_text(GAME)
    spec = tmp_path / f"walker_{how}.yaml"
    spec.write_text(f"id: walker\nconnector:\n  command: [python, walker.py]\n  max_restarts: 1\n"
                    f"kwargs:\n  how: {how}\n")
    return spec


def test_code_cut_short_by_a_killed_game_is_never_ok(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "kill")
    with ScriptedLLMServer() as server:
        server.push(Reply.decision({"kind": "code", "source": "def act(obs):\n    return 1\n"}))
        profile = write_profile(tmp_path, server, mode="code")
        r = subprocess.run(
            [sys.executable, "-m", "polar", "task", "walk", "--harness", str(spec), "--planner", str(profile),
             "--out", str(tmp_path / "run"), "--sandbox", "default"],
            capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "COLUMNS": "200"}, timeout=180)
    out = r.stdout + r.stderr
    trace = [line for line in out.splitlines() if " code:" in line]
    assert trace and all(" ok " not in line for line in trace), out
    assert "failed (harness-error)" in trace[0] and "SIGKILL" in trace[0], out
    rec = json.loads((tmp_path / "run" / "episode.json").read_text())
    outcome = rec["decisions"][0]["outcomes"][0]
    assert outcome["success"] is False and outcome["cause"] == "harness-error" and outcome["steps"] == 3
    assert rec["failure_cause"] == "harness-error" and r.returncode == 1


def test_a_game_exception_on_step_shows_its_traceback(tmp_path: Path) -> None:
    with make_harness(str(_spec(tmp_path, "raise"))) as h:
        h.reset(seed=0)
        h.step(0)
        h.step(0)
        with pytest.raises(HarnessError) as info:
            h.step(0)
    text = str(info.value)
    assert "the game failed on step: step: ValueError: the wall at (2, 3) has no type" in text
    assert "game traceback" in text and 'walker.py", line' in text and "in rules" in text
