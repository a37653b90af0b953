#!/usr/bin/env bash
# Seed N after SFT (docs/memory.md, "Seeds 1 and 2": the same steps): ship the SFT model, then side by side
# the held-out evaluation in two processes and the seed's memory-suite cells. Usage: runs/pt-memory-after-sft.sh N
set -u
N=$1
cd "$(dirname "$0")/.."
PY=".venv/bin/python benchmarks/planner_training.py"
export PYTHONPATH=.
R=runs/pt-memory-seed$N
$PY --out $R --seed $N --observation memory --stages ship --rounds 0 --ship-as polar-planner-memory-seed$N
mkdir -p $R-eval-b; cp $R/models.json $R-eval-b/models.json
EV="--seed $N --name polar-planner-memory-s$N --observation memory --stages eval-sft --threads 1 --eval-seeds 1 \
    --eval-episodes 20 --max-decisions 20 --server-threads 1"
$PY --out $R $EV --eval-tasks DoorKey-8x8,UnlockPickup --port 87${N}3 > $R-eval-a.log 2>&1 &
A=$!
POLAR_MODELS=$PWD/$R-eval-b/models.json $PY --out $R-eval-b $EV --eval-tasks BlockedUnlockPickup --port 87${N}4 > $R-eval-b.log 2>&1 &
B=$!
.venv/bin/python runs/memory-suite-seed.py $N
.venv/bin/polar compare runs/memory-suite-seed$N.yaml --out runs/memory-suite-seed$N > runs/memory-suite-seed$N.log 2>&1 &
C=$!
wait $A $B $C
echo "done $(date -u)"
