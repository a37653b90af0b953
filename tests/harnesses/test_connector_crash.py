"""A game process that crashes: the restarted game is re-seeded deterministically, and
`polar harness check` reports the crash and its cause (not "seeding is not deterministic")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from polar.harnesses.registry import make_harness

ROOT = Path(__file__).resolve().parents[2]

# Start states come from the seeded RNG; episodes last 3 steps; every process dies on its
# 5th step, saying why on stderr. So the 2nd episode of each process is cut short and the
# next reset() (unseeded, as in any rollout) lands on a freshly started process.
FRAGILE_GAME = textwrap.dedent('''
    import os, sys
    import numpy as np
    from gymnasium import spaces
    from polar.harnesses.connector import serve

    class Fragile:
        def __init__(self):
            self.observation_space = spaces.Box(0, 2**30, (1,), np.int64)
            self.action_space = spaces.Discrete(2)
            self.rng = np.random.default_rng()
            self.steps_in_process = 0

        def reset(self, seed=None, options=None):
            if seed is not None:
                self.rng = np.random.default_rng(seed)
            self.t = 0
            return np.array([self.rng.integers(2**30)], np.int64), {}

        def step(self, action):
            self.steps_in_process += 1
            if self.steps_in_process == 5:
                print("boom: the game ran out of fuel", file=sys.stderr, flush=True)
                os._exit(3)
            self.t += 1
            return np.array([self.rng.integers(2**30)], np.int64), 0.0, self.t >= 3, False, {}

    if __name__ == "__main__":
        serve(Fragile)
''')


@pytest.fixture
def fragile(tmp_path: Path) -> Path:
    (tmp_path / "fragile.py").write_text(FRAGILE_GAME)
    spec = tmp_path / "fragile.yaml"
    spec.write_text("id: fragile\nconnector:\n  command: [python, fragile.py]\n  timeout_s: 5\n"
                    "  startup_timeout_s: 60\n  max_restarts: 2\n")
    return spec


def _starts(spec: Path, episodes: int) -> tuple[list[int], list[str]]:
    """The start observation of each episode of a seeded run, and the crash causes seen."""
    starts, causes = [], []
    with make_harness(str(spec)) as h:
        obs, _ = h.reset(seed=7)
        starts.append(int(obs[0]))
        while len(starts) < episodes:
            _, _, term, trunc, info = h.step(0)
            if "harness_error" in info:
                causes.append(info["harness_error"])
            if term or trunc:
                obs, _ = h.reset()
                starts.append(int(obs[0]))
        assert h.restarts >= 2
    return starts, causes


def test_a_restarted_game_is_reseeded_so_seeded_runs_stay_reproducible(fragile: Path) -> None:
    a, causes = _starts(fragile, 6)
    b, _ = _starts(fragile, 6)
    assert a == b  # the start states after each crash are the same in both runs
    assert len(set(a)) == len(a)  # and they are real draws, not one repeated value
    assert causes and all("exited with code 3" in c and "ran out of fuel" in c for c in causes)


def test_harness_check_reports_the_crash_and_its_cause(fragile: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "polar", "harness", "check", str(fragile), "--steps", "40"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = " ".join((p.stdout + p.stderr).split())
    assert p.returncode == 1, out
    assert "the game crashed" in out and "first at step 5" in out
    assert "game process exited with code 3 during step; last output: boom: the game ran out of fuel" in out
    assert "seeding is not deterministic" not in out and "Traceback" not in out
