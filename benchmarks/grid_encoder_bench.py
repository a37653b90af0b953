"""The index-grid encoder's embedding lookup: torch's `nn.Embedding` against Polar's
`_Embedding` (the same lookup, its weight gradient as one `index_add_`), side by side.

    .venv/bin/python benchmarks/grid_encoder_bench.py [--rounds 3] [--train-steps 32768]

One torch thread, the two sides interleaved round by round:
- forward + backward of `GridEncoder` on a PPO minibatch of 256 grids (MiniGrid's 7x7 view
  and DoorKey-16x16's full grid), ms per call;
- the wall time of a PPO run on DoorKey-16x16's full grid (`ppo_doorkey5x5`, the same seed,
  its final evaluation included).
Writes benchmarks/results/grid_encoder_bench.json.
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

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402
from bench_train import interleaved_runs  # noqa: E402

from polar.rl.common import networks  # noqa: E402

SHAPES = {"7x7 view": (7, 7, 3), "16x16 full grid": (16, 16, 3)}
SIDES = ("nn_embedding", "polar")


def side(name: str):
    """A context in which GridEncoder looks up through `name`'s embedding."""
    if name == "polar":
        return nullcontext()
    return mock.patch.object(networks._Embedding, "apply", lambda weight, idx: F.embedding(idx, weight))


def encoder_ms(shape: tuple[int, int, int], calls: int) -> float:
    torch.manual_seed(0)
    enc = networks.GridEncoder(shape, vocab=16, embed=8)
    x = torch.randint(0, 11, (256, *shape), dtype=torch.uint8)
    for _ in range(3):
        enc(x).sum().backward()
    t = time.perf_counter()
    for _ in range(calls):
        enc(x).sum().backward()
    return (time.perf_counter() - t) / calls * 1e3


def figures(details: dict[str, Any]) -> list[Figure]:
    out = []
    for label, d in details["encoder"].items():
        ref, ours = statistics.median(d["nn_embedding_ms"]), statistics.median(d["polar_ms"])
        out += [Figure(f"GridEncoder forward + backward, 256 x {label}, Polar / nn.Embedding", round(ours / ref, 3), "x"),
                Figure(f"GridEncoder forward + backward, 256 x {label}, Polar", round(ours, 2), "ms")]
    tr = details["train"]
    out.append(Figure(f"PPO {tr['steps']} steps on DoorKey-16x16 full grid wall time, Polar / nn.Embedding",
                      round(statistics.median(tr["polar_s"]) / statistics.median(tr["nn_embedding_s"]), 3), "x"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=30, help="calls per encoder measurement")
    ap.add_argument("--train-steps", type=int, default=32768, help="env steps of each PPO run")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    details: dict[str, Any] = {"encoder": {label: {f"{s}_ms": [] for s in SIDES} for label in SHAPES}}
    for label, shape in SHAPES.items():
        d = details["encoder"][label]
        for _ in range(args.rounds):
            for name in SIDES:
                with side(name):
                    d[f"{name}_ms"].append(round(encoder_ms(shape, args.calls), 3))
        print(f"{label}: nn.Embedding {statistics.median(d['nn_embedding_ms']):.2f} ms, "
              f"Polar {statistics.median(d['polar_ms']):.2f} ms", flush=True)
    details["train"] = interleaved_runs(
        "ppo_doorkey5x5", {name: (lambda name=name: side(name)) for name in SIDES}, args.rounds, args.train_steps,
        harness="minigrid:MiniGrid-DoorKey-16x16-v0", harness_kwargs={"full_grid": True}, eval_episodes=2)
    args_out = ["--rounds", str(args.rounds), "--train-steps", str(args.train_steps)]
    write_result("grid_encoder_bench", script_command("grid_encoder_bench.py", args_out), figures(details), details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
