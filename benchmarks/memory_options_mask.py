"""How much of `hrl-memory` is its action mask (docs/memory.md): a uniform random choice among
the options that apply over the memory, no training, on the episodes its cells play.

For each harness of the suite (evals/memory.yaml) and each of its seeds, the cell's episodes
(the suite's episode seeds) are played by `MemoryOptionEnv` with the `hrl-memory` entry's
options and caps, the controller drawing uniformly from the options its `action_mask` allows
(from a generator seeded by the episode's env seed). Writes a JSON of successes per task and
seed.

    PYTHONPATH=. nice -n 10 python benchmarks/memory_options_mask.py \
        --out evals/results/memory/hrl-memory-mask-random.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from polar.agent.memory_options import MASK_KEY, MemoryOptionEnv, memory_options
from polar.evals.planner_agent import harness_spec
from polar.evals.suite import load_suite
from polar.skills.search_path import open_library
from polar.statistics import wilson_interval


def play(env: MemoryOptionEnv, env_seed: int) -> tuple[bool, int]:
    rng = np.random.default_rng(env_seed)
    obs, _ = env.reset(seed=env_seed)
    term = trunc = False
    info: dict = {}
    while not (term or trunc):
        allowed = np.flatnonzero(obs[MASK_KEY])
        k = int(rng.choice(allowed)) if len(allowed) else int(rng.integers(len(env.options)))
        obs, _, term, trunc, info = env.step(k)
    return bool(info.get("success")), env.harness.steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="evals/memory.yaml")
    ap.add_argument("--agent", default="hrl-memory")
    ap.add_argument("--harnesses", default="", help="comma-separated labels (default: every harness the agent plays)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    suite = load_suite(args.suite)
    agent = next(a for a in suite.agents if a.name == args.agent)
    library = open_library(agent.skills)
    rows = []
    picked = {h for h in args.harnesses.split(",") if h}
    for entry in [e for e in suite.harnesses_of(agent) if not picked or e.label in picked]:
        options = memory_options(library, harness_spec(entry))
        t0, per_seed, steps = time.perf_counter(), {}, 0
        for seed in agent.seeds if agent.seeds is not None else suite.seeds:
            env = MemoryOptionEnv(entry.make(), options, skills=str(library.root), max_options=agent.max_options,
                                  max_steps=entry.max_steps, option_steps=agent.option_steps)
            wins = 0
            for i in range(suite.episodes_for(agent.name)):
                ok, n = play(env, suite.episode_seed(seed, i))
                wins, steps = wins + ok, steps + n
            env.close()
            per_seed[seed] = wins
        n = suite.episodes_for(agent.name) * len(per_seed)
        k = sum(per_seed.values())
        lo, hi = wilson_interval(k, n)
        rows.append({"harness": entry.label, "successes": k, "episodes": n, "wilson95": [lo, hi],
                     "per_seed": per_seed, "env_steps": steps, "wall_s": round(time.perf_counter() - t0, 1)})
        print(json.dumps(rows[-1]), flush=True)
    args.out.write_text(json.dumps({"suite": args.suite, "agent": args.agent, "controller": "uniform over action_mask",
                                    "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
