"""Recurrent PPO's LSTM re-run: `polar.rl.common.lstm.masked_lstm` against a loop of `LSTMCell`.

    .venv/bin/python benchmarks/lstm_bench.py [--rounds 3] [--train-steps 32768]

Two measurements, one torch thread, the two sides interleaved round by round:
- forward + backward of one minibatch of the `ppo_lstm_minigrid` recipe (128 steps x 4 envs,
  64 features, 64 units, episodes reset at 2% of the steps), ms per call;
- the wall time of a recurrent PPO run (`ppo_lstm_minigrid` on DoorKey-8x8, the same seed,
  its final evaluation included), with `PPOPolicy.evaluate_sequence` running the loop
  (Polar before `masked_lstm`) or `masked_lstm`.
Writes benchmarks/results/lstm_bench.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402
from bench_train import interleaved_runs  # noqa: E402

from polar.rl.common.lstm import masked_lstm  # noqa: E402

T, N, FEATURES, UNITS, RESET_RATE = 128, 4, 64, 64, 0.02


def unrolled(cell: torch.nn.LSTMCell, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor,
             starts: torch.Tensor) -> torch.Tensor:
    """The loop `evaluate_sequence` ran before `masked_lstm`."""
    outs = []
    for t in range(x.shape[0]):
        keep = (~starts[t]).unsqueeze(-1).to(h.dtype)
        h, c = cell(x[t], (h * keep, c * keep))
        outs.append(h)
    return torch.stack(outs)


def minibatch_ms(fn, calls: int) -> float:
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(FEATURES, UNITS)
    x = torch.randn(T, N, FEATURES, requires_grad=True)
    h, c = torch.zeros(N, UNITS), torch.zeros(N, UNITS)
    starts = torch.rand(T, N) < RESET_RATE
    grad = torch.randn(T, N, UNITS)
    for _ in range(3):
        fn(cell, x, h, c, starts).backward(grad)
    t = time.perf_counter()
    for _ in range(calls):
        fn(cell, x, h, c, starts).backward(grad)
    return (time.perf_counter() - t) / calls * 1e3


def figures(details: dict[str, Any]) -> list[Figure]:
    mb, tr = details["minibatch"], details["train"]
    loop, ours = statistics.median(mb["loop_ms"]), statistics.median(mb["masked_lstm_ms"])
    return [Figure("LSTM forward + backward, 128 steps x 4 envs, masked_lstm / LSTMCell loop", round(ours / loop, 3), "x"),
            Figure("LSTM forward + backward, 128 steps x 4 envs, masked_lstm", round(ours, 2), "ms"),
            Figure(f"recurrent PPO {tr['steps']} steps on DoorKey-8x8 wall time, masked_lstm / LSTMCell loop",
                   round(statistics.median(tr["masked_lstm_s"]) / statistics.median(tr["loop_s"]), 3), "x")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=30, help="minibatches per minibatch measurement")
    ap.add_argument("--train-steps", type=int, default=32768, help="env steps of each PPO run")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sides = {"loop": unrolled, "masked_lstm": masked_lstm}
    details: dict[str, Any] = {"minibatch": {f"{k}_ms": [] for k in sides}}
    mb = details["minibatch"]
    for _ in range(args.rounds):
        for name, fn in sides.items():
            mb[f"{name}_ms"].append(round(minibatch_ms(fn, args.calls), 3))
    print(f"minibatch: loop {statistics.median(mb['loop_ms']):.2f} ms, "
          f"masked_lstm {statistics.median(mb['masked_lstm_ms']):.2f} ms", flush=True)
    details["train"] = interleaved_runs(
        "ppo_lstm_minigrid", {name: (lambda fn=fn: mock.patch("polar.rl.ppo.ppo_policy.masked_lstm", fn))
                              for name, fn in sides.items()},
        args.rounds, args.train_steps, harness="minigrid:MiniGrid-DoorKey-8x8-v0", eval_episodes=10)
    args_out = ["--rounds", str(args.rounds), "--train-steps", str(args.train_steps)]
    write_result("lstm_bench", script_command("lstm_bench.py", args_out), figures(details), details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
