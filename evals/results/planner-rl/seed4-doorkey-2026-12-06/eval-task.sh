#!/bin/bash
# One task of run.sh's held-out evaluation (the same command), so an arm's three tasks can run at once, each in
# its own session. usage: eval-task.sh grpo|rft dk8|up|bup PORT   (resumable: finished episodes are kept)
ARM=$1 T=$2 PORT=$3
declare -A TASK=([dk8]=DoorKey-8x8 [up]=UnlockPickup [bup]=BlockedUnlockPickup)
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
R=evals/results/planner-rl/seed4-doorkey-2026-12-06
case $ARM in
  grpo) M=/work/wt/rl/runs/rl-seed4-doorkey/iter-3/polar-planner-s4o-rl-doorkey-it3.gguf ;;
  rft)  M=/work/wt/rl/runs/rft-seed4-doorkey/round-1/finetune/polar-planner-s4o-rft-doorkey.gguf ;;
esac
/work/main/.venv/bin/python benchmarks/planner_rl_heldout.py eval --out /work/wt/rl/runs/heldout-bar --episodes 20 \
  --parallel 8 --port $PORT --label s4o-$ARM-$T --model $M --task minigrid:MiniGrid-${TASK[$T]}-v0 \
  && cp runs/heldout-bar/s4o-$ARM-$T/evaluation.json $R/eval-s4o-$ARM-$T.json
echo "done s4o-$ARM-$T $(date -u)"
