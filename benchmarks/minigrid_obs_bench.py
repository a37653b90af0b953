"""MiniGrid's own observation encoding against Polar's one-pass encoding, side by side.

    .venv/bin/python benchmarks/minigrid_obs_bench.py [--rounds 3] [--steps 20000] [--train-steps 32768]

Two measurements, each interleaved round by round (MiniGrid's `gen_obs`, then Polar's
`polar/domains/minigrid/obs.py`: the harness flag `fast_obs` off and on, and for the PPO
run `minigrid_obs.install` left out or not):
- env steps/s of the MiniGrid harness under random actions, on the 7x7 view (DoorKey-8x8,
  KeyCorridorS3R3) and on the full grid (DoorKey-16x16, `full_grid: true`), and of `goto`'s
  training env (GotoEnv, which makes its MiniGrid envs itself);
- the wall time of a PPO run (the `ppo_doorkey5x5` recipe on DoorKey-8x8, one torch thread,
  its final evaluation included), the same seed both ways. The observations are the same bit
  for bit, so both runs must end on the same evaluation (checked).
Writes benchmarks/results/minigrid_obs_bench.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402
from bench_train import interleaved_runs  # noqa: E402

ENVS = {"DoorKey-8x8 view": ("minigrid:MiniGrid-DoorKey-8x8-v0", {}),
        "KeyCorridorS3R3 view": ("minigrid:MiniGrid-KeyCorridorS3R3-v0", {}),
        "DoorKey-16x16 full grid": ("minigrid:MiniGrid-DoorKey-16x16-v0", {"full_grid": True}),
        # goto's training env: it steps MiniGrid envs and discards their view for its own features
        "goto's training env (GotoEnv)": ("gym:polar.domains.minigrid.goto_env:GotoEnv", {})}
TRAIN_HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"


def steps_per_s(harness_id: str, kwargs: dict[str, Any], fast: bool, steps: int) -> float:
    from polar.harnesses import make_harness

    minigrid = harness_id.startswith("minigrid:")
    # An env that makes its own MiniGrid envs (as it goes): MiniGrid's encoding where install() is left out.
    side = nullcontext() if fast or minigrid else mock.patch("polar.domains.minigrid.obs.install", lambda env: False)
    with side:
        h = make_harness(harness_id, **({"fast_obs": fast} if minigrid else {}), **kwargs)
        h.reset(seed=0)
        actions = np.random.default_rng(0).integers(h.action_space.n, size=steps)
        t = time.perf_counter()
        for a in actions:
            _, _, terminated, truncated, _ = h.step(int(a))
            if terminated or truncated:
                h.reset()
        return steps / (time.perf_counter() - t)


def figures(details: dict[str, Any]) -> list[Figure]:
    out = []
    for label, d in details["env"].items():
        slow, fast = statistics.median(d["minigrid"]), statistics.median(d["polar"])
        out += [Figure(f"MiniGrid harness steps/s, {label}, Polar's encoding / MiniGrid's", round(fast / slow, 2), "x"),
                Figure(f"MiniGrid harness steps/s, {label}, Polar's encoding", round(fast), "steps/s")]
    t = details["train"]
    out.append(Figure(f"PPO {t['steps']} steps on DoorKey-8x8 wall time, Polar's encoding / MiniGrid's",
                      round(statistics.median(t["polar_s"]) / statistics.median(t["minigrid_s"]), 3), "x"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20000, help="env steps per env measurement")
    ap.add_argument("--train-steps", type=int, default=32768, help="env steps of each PPO run")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    details: dict[str, Any] = {"env": {}}
    for label, (hid, kwargs) in ENVS.items():
        d = details["env"][label] = {"minigrid": [], "polar": []}
        for _ in range(args.rounds):
            d["minigrid"].append(steps_per_s(hid, kwargs, False, args.steps))
            d["polar"].append(steps_per_s(hid, kwargs, True, args.steps))
        print(f"{label}: MiniGrid's {statistics.median(d['minigrid']):,.0f} steps/s, "
              f"Polar's {statistics.median(d['polar']):,.0f} steps/s", flush=True)
    t = details["train"] = interleaved_runs(
        "ppo_doorkey5x5", {"minigrid": lambda: mock.patch("polar.domains.minigrid.obs.install", lambda env: False),
                           "polar": nullcontext}, args.rounds, args.train_steps, harness=TRAIN_HARNESS, eval_episodes=20)
    if t["minigrid_eval"] != t["polar_eval"]:
        raise SystemExit(f"the two encodings trained different policies: {t['minigrid_eval']} vs {t['polar_eval']}")
    args_out = ["--rounds", str(args.rounds), "--steps", str(args.steps), "--train-steps", str(args.train_steps)]
    write_result("minigrid_obs_bench", script_command("minigrid_obs_bench.py", args_out), figures(details), details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
