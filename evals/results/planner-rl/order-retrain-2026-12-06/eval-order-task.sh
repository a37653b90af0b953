#!/bin/bash
# issue 40: one task of eval-order.sh (the same command), so a model's three tasks can run at once,
# each in its own session. usage: runs/eval-order-task.sh N rft|sft up|bup|dk8 PORT   (resumable)
N=$1 KIND=$2 T=$3 PORT=$4
declare -A TASK=([up]=UnlockPickup [bup]=BlockedUnlockPickup [dk8]=DoorKey-8x8)
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
if [ "$KIND" = rft ]; then G=runs/pt-seed$N-order/improve/round-1/finetune/polar-planner-s${N}o-rft.gguf
else G=runs/pt-seed$N-order/sft/polar-planner-s${N}o.gguf; fi
/work/main/.venv/bin/python benchmarks/planner_rl_heldout.py eval --out /work/wt/rl/runs/heldout-bar --episodes 20 \
  --parallel 8 --port $PORT --label s${N}o-$KIND-$T --model /work/wt/rl/$G --task minigrid:MiniGrid-${TASK[$T]}-v0
echo "done s${N}o-$KIND-$T $(date -u)"
