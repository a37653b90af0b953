#!/bin/bash
# issue 40: greedy held-out evaluation (seeds 100000-100019, 20 per task) of one retrained predicates model
# (runs/pt-seedN-order), the same command as evals/results/planner-rl/seed2-order-retrain-2026-12-06/eval.sh.
# usage: runs/eval-order.sh N rft|sft PORT   (resumable: finished episodes are kept)
N=$1 KIND=$2 PORT=$3
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
if [ "$KIND" = rft ]; then G=runs/pt-seed$N-order/improve/round-1/finetune/polar-planner-s${N}o-rft.gguf
else G=runs/pt-seed$N-order/sft/polar-planner-s${N}o.gguf; fi
G=/work/wt/rl/$G
for task in UnlockPickup:up BlockedUnlockPickup:bup DoorKey-8x8:dk8; do
  /work/main/.venv/bin/python benchmarks/planner_rl_heldout.py eval --out /work/wt/rl/runs/heldout-bar --episodes 20 \
    --parallel 8 --port $PORT --label s${N}o-$KIND-${task#*:} --model $G --task minigrid:MiniGrid-${task%:*}-v0
done
echo "done s${N}o-$KIND $(date -u)"
