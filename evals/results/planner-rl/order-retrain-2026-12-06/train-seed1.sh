#!/bin/bash
# predicates-mode SFT seed 1 retrained on main's code (targets in the served grammar's key order, issue 41's fix),
# the flagship per-seed command (docs/planner-training.md) otherwise unchanged. Resumable: re-run this script.
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
STAGES=${STAGES:-teacher,dataset,sft,improve}
/work/main/.venv/bin/python benchmarks/planner_training.py --out /work/wt/rl/runs/pt-seed1-order --seed 1 \
    --name polar-planner-s1o --stages $STAGES --threads 1 --token-budget 420000 --max-length 512 --lr 1e-3 \
    --lora-layers 10 --sft-eval-examples 40 --max-decisions 20 --rounds 1 --episodes 3 \
    --round-token-budget 30000 --no-round-eval --port 8741 --server-threads 1 \
    >> /work/wt/rl/runs/pt-seed1-order.log 2>&1
echo "exit $? $(date -u)" >> /work/wt/rl/runs/pt-seed1-order.log
