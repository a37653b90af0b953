"""torch.tanh against Polar's numpy tanh path (`polar.rl.common.networks._numpy_path`), forward + backward, side by side.

    .venv/bin/python benchmarks/tanh_bench.py [--rounds 5]

On the shape of PPO CartPole's update (both trunks of `EnsembleMLP`: [2, 256, 64]) and of
MiniGrid's shared trunk ([512, 64]), one torch thread, the two interleaved round by round;
reported: microseconds per forward + backward, the ratio, the largest error against a
float64 tanh, and which path Polar's `tanh` takes on this machine (`numpy_tanh_pays`: numpy
only where its forward measures at least 20% faster). Writes benchmarks/results/tanh_bench.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

from polar.rl.common.networks import _numpy_path, numpy_tanh_pays  # noqa: E402

SHAPES = {"PPO CartPole update [2, 256, 64]": (2, 256, 64), "MiniGrid trunk [512, 64]": (512, 64)}


def per_call_us(fn, x: torch.Tensor, g: torch.Tensor, n: int) -> float:
    for _ in range(20):
        fn(x).backward(g)
    t = time.perf_counter()
    for _ in range(n):
        fn(x).backward(g)
    return (time.perf_counter() - t) / n * 1e6


def figures(details: dict[str, dict[str, object]]) -> list[Figure]:
    out = []
    for label in SHAPES:
        d = details[label]
        ours, theirs = statistics.median(d["numpy_us"]), statistics.median(d["torch_us"])  # type: ignore[arg-type]
        out += [Figure(f"tanh forward + backward on {label}, numpy path / torch.tanh", round(ours / theirs, 3), "x"),
                Figure(f"tanh forward + backward on {label}, torch.tanh", round(theirs, 1), "us")]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=500)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    details: dict[str, dict[str, object]] = {}
    for label, shape in SHAPES.items():
        x = (torch.randn(*shape) * 2).requires_grad_()
        g = torch.randn(*shape)
        ours, theirs = [], []
        for _ in range(args.rounds):
            theirs.append(per_call_us(torch.tanh, x, g, args.calls))
            ours.append(per_call_us(_numpy_path, x, g, args.calls))
        with torch.no_grad():
            err = float((_numpy_path(x).double() - torch.tanh(x.double())).abs().max())
        details[label] = {"numpy_us": ours, "torch_us": theirs, "max_abs_error": err}
        print(f"{label}: torch.tanh {statistics.median(theirs):.1f} us, numpy path {statistics.median(ours):.1f} us, "
              f"max |error| {err:.1e}", flush=True)
    path = "numpy" if numpy_tanh_pays() else "torch.tanh"
    details["polar_path"] = {"path": path}
    print(f"Polar's tanh takes {path} on this machine", flush=True)
    write_result("tanh_bench", script_command("tanh_bench.py", ["--rounds", str(args.rounds)]), figures(details),
                 details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
