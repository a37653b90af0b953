"""The GRPO update side by side: every layer in every pass, against the layers without LoRA run
once per sequence (`GRPOTrainer.update(share_frozen=...)`), on one iteration's recorded rollouts
from the same adapter. Prints wall and CPU seconds, tokens/s and the update's statistics (they
must agree: the two compute the same log-probs).

    python benchmarks/planner_rl_update_speed.py runs/rl-seed2 --iteration 2 --sequences 48
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a `polar llm rl` run folder (its start checkpoint and iterations)")
    ap.add_argument("--iteration", type=int, default=2, help="whose rollouts; the adapter before it is the start")
    ap.add_argument("--sequences", type=int, default=48, help="the first N rollouts (0: all)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the two rows here")
    args = ap.parse_args()

    from polar.llm.rl import GRPOConfig, GRPOTrainer, read_rollouts

    run = Path(args.run)
    state = json.loads((run / "state.json").read_text())
    grpo = GRPOConfig.model_validate(state["config"]["grpo"] | {"threads": args.threads})
    rollouts = read_rollouts(run / f"iter-{args.iteration}" / "rollouts.jsonl")
    rollouts = rollouts[: args.sequences] if args.sequences else rollouts
    previous = run / f"iter-{args.iteration - 1}" / "adapter"
    rows = []
    for share in (False, True):
        trainer = GRPOTrainer(run / "start" / "checkpoint", grpo, adapter=previous if previous.exists() else None)
        t0, c0 = time.perf_counter(), cpu_s()
        stats = trainer.update(rollouts, share_frozen=share)
        rows.append({"share_frozen": share, "wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0,
                     **{k: stats[k] for k in ("sequences", "tokens", "tokens_per_s", "loss", "kl", "ratio",
                                              "clip_frac", "frozen_layers")}})
        print(json.dumps(rows[-1]), flush=True)
    a, b = rows
    print(f"speed-up: {a['wall_s'] / b['wall_s']:.2f}x wall, {a['cpu_s'] / b['cpu_s']:.2f}x CPU; "
          f"loss {a['loss']:.6f} vs {b['loss']:.6f}, kl {a['kl']:.6f} vs {b['kl']:.6f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
