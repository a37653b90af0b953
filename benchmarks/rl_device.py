"""The learner on the GPU against this CPU (issue 45 item 2), side by side where CUDA exists.

    .venv/bin/python benchmarks/rl_device.py [--steps 8192] [--pixels minigrid|crafter | --recipe NAME]
                                             [--improve CONFIG.yaml]

1. PPO on a pixel harness, `--pixels`: `minigrid` (MiniGrid-Empty-8x8 with `rgb: true`: the
   agent's 7x7 view as 56x56x3 pixels) or `crafter` (Crafter's 64x64x3 frame alone,
   `pixels_only: true`, as evals/crafter.yaml's `ppo-pixels` trains); a Nature-CNN policy,
   8 envs x 128 steps per update; or `--recipe ppo_crafter_pixels`, the recipe the Crafter
   suite's `ppo-pixels` trains with (1 env x 2048 steps, 10 epochs of 64-sample minibatches,
   512 CNN features), whose env steps/s say how long its 1M-step seeds take on each
   device: `polar train`'s trainer run with `device: cpu`, then with
   `device: cuda`; reported: env steps per second over the whole run (rollouts on the CPU
   policy, updates on the learner's device) and the seconds spent in updates.
2. One planner-RL iteration (`polar llm improve`, one round: sample episodes with the
   current model, filter by reward, fine-tune, register), given an improve config with
   `--improve`; the round's fine-tune runs with `finetune.device: cpu`, then `cuda` (the
   sampling server is the same for both). Reported: the round's wall time.

Without CUDA only the CPU figures are printed, with a line saying that CUDA is absent.
Prints one JSON object per measurement and writes benchmarks/results/rl_device.json
(benchmarks/README.md): each device's figures, and CUDA's speed-up over the CPU where both ran.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

# --pixels: the harness id and kwargs of each pixel harness.
PIXEL_HARNESSES: dict[str, tuple[str, dict[str, object]]] = {
    "minigrid": ("minigrid:MiniGrid-Empty-8x8-v0", {"rgb": True}),
    "crafter": ("crafter:", {"pixels_only": True}),
}


def pixel_config(device: str, steps: int, seed: int, pixels: str = "minigrid", recipe: str | None = None) -> Any:
    """The run: a recipe's TrainConfig (`--recipe`), else `pixels`' harness with 8 envs x 128
    steps per update; `steps`, `seed` and `device` set, no progress bar, one eval episode."""
    from polar.rl.config import TrainConfig

    fixed = {"steps": steps, "seed": seed, "device": device, "progress": False, "eval_episodes": 1}
    if recipe is not None:
        from polar.evals.training import load_recipe

        return TrainConfig.model_validate(load_recipe(recipe, "rl_device").model_dump() | fixed)
    harness, kwargs = PIXEL_HARNESSES[pixels]
    return TrainConfig(harness=harness, harness_kwargs=kwargs, network={"shared": True, "activation": "relu"},
                       ppo={"num_envs": 8, "num_steps": 128, "num_minibatches": 4, "update_epochs": 4}, **fixed)


def ppo_pixels(cfg: Any) -> dict[str, float | str]:
    from polar.rl.trainer import Trainer

    with tempfile.TemporaryDirectory() as out:
        t = Trainer(cfg, out)
        update_s = [0.0]
        update = t.algo.update

        def timed_update(*a):  # the update's own time (its metrics are read back: synchronised)
            u0 = time.perf_counter()
            r = update(*a)
            update_s[0] += time.perf_counter() - u0
            return r

        t.algo.update = timed_update
        t0 = time.perf_counter()
        t._train(None)  # the training loop only: no final evaluation or files
        wall = time.perf_counter() - t0
    return {"measure": "ppo_pixels", "harness": cfg.harness, "device": str(t.device), "env_steps": t.env_steps,
            "wall_s": round(wall, 2), "env_steps_per_s": round(t.env_steps / wall, 1),
            "update_s": round(update_s[0], 2)}


def improve_round(config: Path, device: str) -> dict[str, float | str]:
    from polar.config import read_mapping, validate
    from polar.evals.improve import ImproveConfig, improve

    data = read_mapping(config)
    data |= {"rounds": 1, "name": f"{data['name']}-bench-{device}",
             "finetune": {**data.get("finetune", {}), "device": device}}
    cfg = validate(ImproveConfig, data, str(config))
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        improve(cfg, out, evaluate_start=False)
        wall = time.perf_counter() - t0
    return {"measure": "planner_rl_round", "device": device, "wall_s": round(wall, 1)}


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8192, help="PPO env steps per device")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pixels", choices=sorted(PIXEL_HARNESSES), default="minigrid", help="the pixel harness")
    ap.add_argument("--recipe", help="a PPO recipe on pixels instead (e.g. ppo_crafter_pixels): its harness and "
                    "hyperparameters")
    ap.add_argument("--improve", type=Path, help="an improve config (polar llm improve) for the planner-RL round")
    args = ap.parse_args()
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    if len(devices) == 1:
        print("CUDA is absent (torch sees no GPU): CPU figures only", flush=True)
    else:
        print(f"CUDA: {torch.cuda.get_device_name(0)}", flush=True)
    ppo, rounds = {}, {}
    for dev in devices:
        ppo[dev] = ppo_pixels(pixel_config(dev, args.steps, args.seed, args.pixels, args.recipe))
        print(json.dumps(ppo[dev]), flush=True)
    if args.improve is None:
        print("planner-RL round: skipped (give --improve CONFIG, an improve config with its models installed)")
    else:
        for dev in devices:
            rounds[dev] = improve_round(args.improve, dev)
            print(json.dumps(rounds[dev]), flush=True)
    workload = f"recipe {args.recipe}" if args.recipe else args.pixels
    details = {"cuda": len(devices) == 2, "pixels": workload, "ppo_pixels": ppo, "planner_rl_round": rounds}
    write_result("rl_device", script_command("rl_device.py"), figures(details), details=details)


def figures(details: dict[str, Any]) -> list[Figure]:
    """Each device's PPO env steps/s and planner-RL round time, and CUDA over the CPU where both ran."""
    ppo, rounds = details["ppo_pixels"], details["planner_rl_round"]
    on = f"PPO on pixels ({details['pixels']})"
    figs = [Figure(f"{on}, env steps/s, learner on {d}", float(r["env_steps_per_s"]), "steps/s")
            for d, r in ppo.items()]
    figs += [Figure(f"one planner-RL round, fine-tune on {d}", float(r["wall_s"]), "s", better="lower")
             for d, r in rounds.items()]
    if "cuda" in ppo:
        figs.append(Figure(f"{on}: CUDA learner / CPU learner, env steps/s",
                           round(float(ppo["cuda"]["env_steps_per_s"]) / float(ppo["cpu"]["env_steps_per_s"]), 2), "x"))
    if "cuda" in rounds:
        figs.append(Figure("one planner-RL round: fine-tune on CUDA / on CPU, wall time",
                           round(float(rounds["cuda"]["wall_s"]) / float(rounds["cpu"]["wall_s"]), 2), "x",
                           better="lower"))
    return figs


if __name__ == "__main__":
    main()
