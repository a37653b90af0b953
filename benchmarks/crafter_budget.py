"""A Crafter arm's committed episodes as if played under a smaller decision budget and fewer
episodes per seed: the reference an LLM arm with such limits is compared with.

    python benchmarks/crafter_budget.py evals/results/crafter_memory --agent symbolic-memory \
        --decisions 150 --episodes 2

The symbolic planner and its skills are deterministic per game (the suite seeds every episode),
so its episode cut after N decisions is exactly the episode a budget of N decisions would have
played: the achievements are those unlocked by the end of decision N (the `achieved(...)` atoms
of its last outcome's predicates, the agent's own record). A full episode's atoms are checked
against the harness's own `episode_stats`, so a disagreement between the two sources fails loudly.
Scores with the suite's bootstrap (polar.domains.crafter.scores).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from polar.domains.crafter.harness import ACHIEVEMENTS  # noqa: E402
from polar.domains.crafter.scores import episode_metrics  # noqa: E402


def achieved_by(ep: dict[str, Any], decisions: int | None) -> set[str]:
    """The achievements unlocked by the end of the first `decisions` decisions (None: all)."""
    kept = ep["decisions"][:decisions] if decisions is not None else ep["decisions"]
    last = next((o for d in reversed(kept) for o in reversed(d.get("outcomes") or [])), None)
    preds = last["predicates_after"] if last else []
    return {p[len("achieved("):-1] for p in preds if p.startswith("achieved(")}


def truncated_stats(ep: dict[str, Any], decisions: int) -> dict[str, Any]:
    """`episode_stats`-shaped achievements of the episode cut after `decisions` decisions."""
    stats = ep["extra"]["episode_stats"]
    full = {k for k, v in stats["achievements"].items() if int(v) > 0}
    if len(ep["decisions"]) <= decisions:
        return stats
    # the agent's record and the harness's must agree on the whole episode (one may lag the
    # other only for an achievement unlocked by the episode's very last step)
    whole = achieved_by(ep, None)
    if not whole <= full or len(full - whole) > 1:
        raise SystemExit(f"episode {ep['episode_id']}: predicates {sorted(whole)} vs stats {sorted(full)}")
    got = achieved_by(ep, decisions)
    return {"achievements": {k: int(k in got) for k in ACHIEVEMENTS}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="a suite's results folder (its cells/)")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--decisions", type=int, required=True)
    ap.add_argument("--episodes", type=int, default=None, help="the first N episodes of each seed (default: all)")
    args = ap.parse_args()
    seeds, steps, cut = [], [], 0
    for f in sorted((args.results / "cells" / args.agent).glob("*/seed-*.json")):
        eps = json.loads(f.read_text())["episodes"][: args.episodes]
        seeds.append([truncated_stats(e, args.decisions) for e in eps])
        cut += sum(len(e["decisions"]) > args.decisions for e in eps)
        steps += [sum(d["env_steps"] for d in e["decisions"][: args.decisions]) for e in eps]
    if not seeds:
        raise SystemExit(f"{args.results}/cells/{args.agent}: no cells")
    figures = episode_metrics(seeds)
    print(f"{args.agent}: {sum(map(len, seeds))} episodes ({len(seeds)} seeds), at most {args.decisions} decisions "
          f"({cut} cut), mean env steps {sum(steps) / len(steps):.0f}")
    for fig in figures:
        e = fig["estimate"]
        print(f"  {fig['name']:<26} {e.value:6.1f} [{e.lo:.1f}, {e.hi:.1f}]")


if __name__ == "__main__":
    main()
