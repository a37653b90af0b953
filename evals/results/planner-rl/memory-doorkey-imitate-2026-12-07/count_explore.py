"""Per iteration of a run folder: decisions drawn (of which `explore`), and `explore` written by the
model itself (undrawn decisions), from iter-N/sample/calls.jsonl.

    python evals/results/planner-rl/memory-doorkey-imitate-2026-12-07/count_explore.py runs/rl-memory-doorkey-imitate
"""
import json
import sys
from pathlib import Path


def skill(reply: str) -> str | None:
    try:
        return json.loads(reply)["decision"].get("skill")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def main(run: Path) -> None:
    for d in sorted(run.glob("iter-*/sample/calls.jsonl"), key=lambda p: int(p.parts[-3].split("-")[1])):
        calls = [json.loads(line) for line in d.open()]
        drawn = [c for c in calls if c.get("forced_skill")]
        free = [c for c in calls if not c.get("forced_skill")]
        print(f"{d.parts[-3]}: drawn {len(drawn)} ({sum(c['forced_skill'] == 'explore' for c in drawn)} explore); "
              f"explore written {sum(skill(c['reply']) == 'explore' for c in free)} of {len(free)} undrawn")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
