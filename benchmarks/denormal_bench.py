"""SAC updates with subnormal floats kept against flushed to zero, side by side.

    .venv/bin/python benchmarks/denormal_bench.py [--train-steps 3000] [--updates 300] [--rounds 3]

Trains Polar's SAC on Pendulum-v1 (rl_vs_sb3.py's hyper-parameters, one torch thread) for
`--train-steps` env steps with subnormals kept, then times `--updates` gradient steps from
that state, subnormals kept and flushed (`torch.set_flush_denormal`), interleaved round by
round. Each timing block starts from the same saved state (weights, targets, optimizers), so
a flushed block never hands a cleaner state to the next. Reports ms per update, the ratio,
and how many of the critic's Adam first-moment entries were subnormal when timing began
(dead ReLU units' moments decay through that range). Writes benchmarks/results/denormal_bench.json.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402
from rl_vs_sb3 import polar_config  # noqa: E402

from polar.rl.trainer import Trainer  # noqa: E402

SMALLEST_NORMAL = torch.finfo(torch.float32).tiny


def figures(details: dict) -> list[Figure]:
    kept, flushed = statistics.median(details["kept_ms"]), statistics.median(details["flushed_ms"])
    label = f"SAC Pendulum update (256 x 2x256 MLPs, after {details['train_steps']} env steps)"
    return [Figure(f"{label}, subnormals flushed / kept, ms per update", round(flushed / kept, 3), "x"),
            Figure(f"{label}, subnormals kept", round(kept, 2), "ms"),
            Figure(f"{label}, critic Adam first-moment entries that are subnormal",
                   round(details["subnormal_fraction"], 3), "fraction")]


def time_updates(trainer: Trainer, snapshot: tuple[dict, dict], flush: bool, updates: int) -> float:
    sac = trainer.algo.sac
    sac.policy.load_state_dict(copy.deepcopy(snapshot[0]))  # weights
    sac.load_state_dict(copy.deepcopy(snapshot[1]))  # targets, optimizers, log alpha, counters
    batches = [trainer.algo.replay.sample(256) for _ in range(updates)]
    torch.set_flush_denormal(flush)
    try:
        t = time.perf_counter()
        for b in batches:
            sac.update(b)
        return (time.perf_counter() - t) / updates * 1e3
    finally:
        torch.set_flush_denormal(False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-steps", type=int, default=3000)
    ap.add_argument("--updates", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        cfg = polar_config("sac_pendulum", args.seed, args.train_steps).model_copy(update={"flush_denormal": False})
        trainer = Trainer(cfg, d)
        trainer.run()
    moments = [trainer.algo.sac.q_optimizer.state[p]["exp_avg"] for p in trainer.algo.sac.q_params]
    sub = sum(int(((m != 0) & (m.abs() < SMALLEST_NORMAL)).sum()) for m in moments)
    frac = sub / sum(m.numel() for m in moments)
    snapshot = (copy.deepcopy(trainer.policy.state_dict()), copy.deepcopy(trainer.algo.sac.state_dict()))
    kept, flushed = [], []
    for r in range(args.rounds):
        for flush in ((False, True) if r % 2 == 0 else (True, False)):
            (flushed if flush else kept).append(time_updates(trainer, snapshot, flush, args.updates))
        print(f"round {r}: kept {kept[-1]:.2f} ms, flushed {flushed[-1]:.2f} ms per update", flush=True)
    details = {"train_steps": args.train_steps, "updates": args.updates, "kept_ms": kept, "flushed_ms": flushed,
               "subnormal_fraction": frac}
    print(f"flushed / kept = {statistics.median(flushed) / statistics.median(kept):.3f}; "
          f"subnormal first-moment entries {frac:.1%}")
    argv_run = ["--train-steps", str(args.train_steps), "--updates", str(args.updates), "--rounds", str(args.rounds)]
    write_result("denormal_bench", script_command("denormal_bench.py", argv_run), figures(details), details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
