"""The random floor on a user's game: the guess-a-number game of docs/connector.md draws its
secret from `np.random.default_rng(seed)`; random actions must come from a stream of their own,
or "random" guesses the secret every time. Run through the real connector (a game process)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from polar.evals.agents import RANDOM_AGENT_PURPOSE, RandomAgent
from polar.evals.suite import RandomAgentConfig
from polar.harnesses.check import check_harness
from polar.harnesses.registry import make_harness
from polar.harnesses.spaces import CHECK_SAMPLER, sampler_seed

ROOT = Path(__file__).resolve().parents[2]
N = 16  # secrets: a uniform guess wins with probability 1/16


def _doc_block(first_line: str) -> str:
    """The fenced block of docs/connector.md that starts with `first_line`."""
    text = (ROOT / "docs" / "connector.md").read_text()
    m = re.search(r"```\w*\n(" + re.escape(first_line) + r"\n.*?)```", text, re.S)
    assert m, f"docs/connector.md has no block starting {first_line!r}"
    return m.group(1)


@pytest.fixture(scope="module")
def guess(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The game and its spec exactly as docs/connector.md shows them."""
    d = tmp_path_factory.mktemp("guess")
    (d / "guess_connector.py").write_text(_doc_block("# harnesses/guess/guess_connector.py"))
    (d / "guess.yaml").write_text(_doc_block("# harnesses/guess/guess.yaml"))
    return d / "guess.yaml"


def _binomial_upper(n: int, p: float, alpha: float = 1e-6) -> int:
    """The smallest k with P(X > k) < alpha for X ~ Binomial(n, p)."""
    tail, k = 1.0, -1
    while tail >= alpha:
        k += 1
        tail -= math.comb(n, k) * p**k * (1 - p) ** (n - k)
    return k


def test_sampler_seed_is_deterministic_and_not_the_games_stream() -> None:
    assert sampler_seed(7, "a") == sampler_seed(7, "a") != sampler_seed(7, "b") != sampler_seed(8, "a")
    assert sampler_seed(7, RANDOM_AGENT_PURPOSE) != sampler_seed(7, CHECK_SAMPLER)
    # the bug it prevents: a space seeded with the game's seed replays the game's draws
    from gymnasium.spaces import Discrete

    same, own = Discrete(N), Discrete(N)
    same.seed(3)
    own.seed(sampler_seed(3, RANDOM_AGENT_PURPOSE))
    secrets = np.random.default_rng(3).integers(N, size=50)
    assert [same.sample() for _ in range(50)] == list(secrets)
    assert [own.sample() for _ in range(50)] != list(secrets)
    with pytest.raises(ValueError, match="negative"):
        sampler_seed(-1, "a")


def test_the_random_agent_wins_about_one_guess_in_n(guess: Path) -> None:
    episodes = 200
    agent = RandomAgent(RandomAgentConfig(name="random"))
    with make_harness(str(guess)) as h:
        records = [agent.episode(h, "guess the number", seed, None, f"e{seed}") for seed in range(episodes)]
    wins = sum(bool(r.success) for r in records)
    assert all(r.env_steps == 1 and r.success is not None for r in records)
    # Binomial(200, 1/16): 12.5 expected; above the bound with probability < 1e-6 (was 200/200)
    assert 1 <= wins <= _binomial_upper(episodes, 1 / N), wins
    again = RandomAgent(RandomAgentConfig(name="random"))
    with make_harness(str(guess)) as h:  # the same seeds: the same guesses
        assert [again.episode(h, "", s, None, "x").success for s in range(20)] == [r.success for r in records[:20]]


def test_harness_check_plays_whole_episodes_with_random_guesses(guess: Path) -> None:
    r = check_harness(str(guess), episodes=100)
    assert r.passed, r.problems
    assert (r.episodes, r.steps, r.terminated, r.truncated, r.seeds) == (100, 100, 100, 0, list(range(100)))
    assert r.deterministic is True
    assert sum(r.returns) <= _binomial_upper(100, 1 / N), r.returns  # was 100 of 100


def test_polar_compare_gives_random_about_one_in_n(guess: Path, tmp_path: Path) -> None:
    suite = {"name": "guess", "agents": [{"name": "random", "kind": "random"}],
             "harnesses": [{"id": str(guess)}], "seeds": 4, "episodes": 40}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    p = subprocess.run([sys.executable, "-m", "polar", "compare", "s.yaml", "--out", "out", "--workers", "0"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stdout + p.stderr
    row = json.loads((tmp_path / "out" / "results.json").read_text())["rows"][0]
    n = row["episodes"]
    assert n == 160
    # 160 one-step guesses: 10 wins expected; the bound fails with probability < 1e-6 (was 160)
    assert 1 <= round(row["success"]["value"] * n) <= _binomial_upper(n, 1 / N), row
