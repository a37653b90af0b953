#!/bin/bash
# predicates SFT seed 2 retrained on the fixed key order (runs/pt-seed2-order, SFT stage only), greedy held-out box tasks
cd /work/main
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/main
G=/work/wt/rl/runs/pt-seed2-order/sft/polar-planner-s2o.gguf
for task in UnlockPickup:up BlockedUnlockPickup:bup; do
  nice -n 5 /work/main/.venv/bin/python benchmarks/planner_rl_heldout.py eval --out /work/wt/rl/runs/heldout-bar --episodes 20 --parallel 8 --port 8732 \
    --label s2o-sft-${task#*:} --model $G --task minigrid:MiniGrid-${task%:*}-v0
done
echo "done $(date -u)"
