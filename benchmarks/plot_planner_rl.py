"""Learning curves of `polar llm rl` runs: success against sampled episodes and against wall time.

Reads a run's committed `results.json` and `state.json` (the folder `polar llm rl --out` wrote,
or its copy under `evals/results/planner-rl/`) and draws, per task, the sampled success of each
iteration (temperature 1, the iteration's group(s) of that task) and the in-run greedy held-out
evaluations (Wilson 95% intervals), once against the cumulative sampled episodes and once
against the cumulative training wall time (sampling + update + convert; the evaluations' own
time left out). `--table` prints the per-iteration rows as a Markdown table; `--heldout` with
`--at LABEL=ITER` adds `planner_rl_heldout.py`'s final evaluations at their iterations.

    python benchmarks/plot_planner_rl.py evals/results/planner-rl/seed2-boxes-long-2026-12-06 \
        --out evals/results/planner-rl/seed2-boxes-long-2026-12-06/curves.png --table
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TRAIN_STAGES = ("sample", "update", "convert")


def load_run(folder: Path) -> dict[str, Any]:
    """Per iteration: episodes and training wall time so far, sampled per-task counts, row; the evaluations."""
    results = json.loads((folder / "results.json").read_text())
    state = json.loads((folder / "state.json").read_text())["iterations"]
    points, episodes, wall = [], 0, 0.0
    rows = {r["iteration"]: r for r in results["rows"]}
    for it in sorted(rows):
        st = state[str(it)]
        episodes += st["sample"]["episodes"]
        wall += sum(float(st[s]["wall_s"]) for s in TRAIN_STAGES)
        points.append({"iteration": it, "episodes": episodes, "wall_s": wall, "per_task": st["sample"]["per_task"],
                       "row": rows[it]})
    at = {0: (0, 0.0)} | {p["iteration"]: (p["episodes"], p["wall_s"]) for p in points}
    evals = [{"iteration": e["iteration"], "episodes": at[e["iteration"]][0], "wall_s": at[e["iteration"]][1],
              "rows": e["rows"]} for e in results["evals"] if e["iteration"] in at]
    return {"points": points, "evals": evals}


def final_points(run: dict[str, Any], heldout: Path, at: list[str]) -> list[dict[str, Any]]:
    """Evaluations of `planner_rl_heldout.py` (its results.json) placed at an iteration: LABEL=ITER."""
    evaluations = json.loads(heldout.read_text())["evaluations"]
    where = {0: (0, 0.0)} | {p["iteration"]: (p["episodes"], p["wall_s"]) for p in run["points"]}
    out = []
    for spec in at:
        label, _, it = spec.partition("=")
        if label not in evaluations or int(it) not in where:
            raise SystemExit(f"--at {spec}: no evaluation {label!r} in {heldout} or no iteration {it} in the run")
        episodes, wall = where[int(it)]
        out.append({"episodes": episodes, "wall_s": wall, "row": evaluations[label]["rows"][0]})
    return out


def plot(run: dict[str, Any], out: Path, title: str, finals: list[dict[str, Any]] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # a task only evaluated at the end (DoorKey-8x8 after RL on the box tasks) gets its own line too
    tasks = sorted({t for p in run["points"] for t in p["per_task"]} | {r["task"] for e in run["evals"] for r in e["rows"]}
                   | {f["row"]["task"] for f in finals or []})
    colors = {t: f"C{i}" for i, t in enumerate(tasks)}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), dpi=100, sharey=True)
    for ax, key, scale, label in ((axes[0], "episodes", 1.0, "sampled episodes (cumulative)"),
                                  (axes[1], "wall_s", 60.0, "training wall time, minutes (sample + update + convert)")):
        for t in tasks:
            xs = [p[key] / scale for p in run["points"] if t in p["per_task"]]
            ys = [p["per_task"][t][0] / p["per_task"][t][1] for p in run["points"] if t in p["per_task"]]
            if xs:  # a task never sampled (evaluated only) has no sampled line
                ax.plot(xs, ys, "o:", ms=4, color=colors[t], alpha=0.6, label=f"{t}: sampled (T=1, 8 episodes)")
            ev = [(e[key] / scale, r) for e in run["evals"] for r in e["rows"] if r["task"] == t]
            if ev:
                ax.errorbar([x for x, _ in ev], [r["success"] for _, r in ev],
                            yerr=[[r["success"] - r["ci95"][0] for _, r in ev], [r["ci95"][1] - r["success"] for _, r in ev]],
                            fmt="s-", capsize=3, color=colors[t],
                            label=f"{t}: held-out greedy ({ev[0][1]['episodes']} episodes)")
            fin = [(f[key] / scale, f["row"]) for f in finals or [] if f["row"]["task"] == t]
            if fin:
                ax.errorbar([x for x, _ in fin], [r["success"] for _, r in fin],
                            yerr=[[r["success"] - r["ci95"][0] for _, r in fin], [r["ci95"][1] - r["success"] for _, r in fin]],
                            fmt="D--", ms=7, capsize=4, color=colors[t], mfc="white",
                            label=f"{t}: final held-out greedy ({', '.join(str(r['episodes']) for _, r in fin)} episodes)")
        ax.set_xlabel(label, fontsize=9)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success rate")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def table(run: dict[str, Any]) -> str:
    head = ("| iter | task(s) sampled | episodes (total) | sampled success | mean return | KL | clip frac | "
            "sample tok/s | train tok/s | sample s | update s | convert s | training wall (total) | held-out greedy |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    evals = {e["iteration"]: e for e in run["evals"]}
    for p in run["points"]:
        r = p["row"]
        sampled = ", ".join(f"{t} {k}/{n}" for t, (k, n) in p["per_task"].items())
        ev = evals.get(p["iteration"])
        held = "; ".join(f"{x['task']} {x['successes']}/{x['episodes']}" for x in ev["rows"]) if ev else ""
        kl = f"{r['kl']:.4f}" if r.get("kl") is not None else "-"
        clip = f"{r['clip_frac']:.3f}" if r.get("clip_frac") is not None else "-"
        train = f"{r['train_tokens_per_s']:.0f}" if r.get("train_tokens_per_s") else "-"
        lines.append(f"| {p['iteration']} | {', '.join(p['per_task'])} | {r['episodes']} ({p['episodes']}) | {sampled} | "
                     f"{r['mean_return']:.3f} | {kl} | {clip} | {r['sample_tokens_per_s']:.1f} | {train} | "
                     f"{r['sample_s']:.0f} | {r['update_s']:.0f} | {r['convert_s']:.0f} | {p['wall_s'] / 60:.1f} min | {held} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a folder with results.json and state.json")
    ap.add_argument("--out", type=Path, help="the PNG to write")
    ap.add_argument("--title", default=None)
    ap.add_argument("--table", action="store_true", help="print the per-iteration Markdown table")
    ap.add_argument("--heldout", type=Path, help="planner_rl_heldout.py's results.json, for --at")
    ap.add_argument("--at", action="append", default=[], help="LABEL=ITER: that evaluation drawn at that iteration")
    args = ap.parse_args()
    run = load_run(args.run)
    if args.out:
        finals = final_points(run, args.heldout, args.at) if args.heldout else None
        plot(run, args.out, args.title or f"polar llm rl: {args.run.name}", finals)
        print(f"wrote {args.out}")
    if args.table:
        print(table(run))


if __name__ == "__main__":
    main()
