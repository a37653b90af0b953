# rl5-seed0's iterations on the validation seeds (the shipped-model rule; docs/code-mode.md,
# "Run 5's RL round"), docker, resumable: a watcher that validates the newest finished iteration
# not yet validated, one at a time (so it never falls behind the run), then any it skipped.
#   bash evals/results/code/run_rl5_val.sh [RUN]      (runs until killed; RUN: rl5-seed0 by default,
#                                                     rl6-seed0 for run 6)
cd "$(dirname "$0")/../../.." || exit 1
name=${1:-rl5-seed0}
run=runs/code/$name
pending() {  # finished iterations without a complete validation, newest first
  python3 - "$run" <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
try:
    its = json.loads((run / "state.json").read_text())["iterations"]
except (OSError, ValueError, KeyError):
    sys.exit(0)
done = sorted((int(k) for k, v in its.items() if "log" in v), reverse=True)
for it in done:
    summary = Path(f"evals/results/code/{run.name}-it{it}-validation/summary.json")
    tasks = json.loads(summary.read_text())["tasks"] if summary.exists() else {}
    if len(tasks) < 5 or any(t.get("episodes") != 5 for t in tasks.values()):
        print(it)
PY
}
while true; do
  it=$(pending | head -1)
  if [ -z "$it" ]; then sleep 30; continue; fi
  echo "validating iteration $it at $(date -u +%H:%M:%S)"
  PYTHONPATH=$PWD polar code eval --model $run/iter-$it/code-rl-it$it.gguf --out evals/results/code/$name-it$it-validation \
      --seeds 100-104 --k 3 --backend docker --port 8039 || sleep 60
  echo "iteration $it done at $(date -u +%H:%M:%S)"
done
