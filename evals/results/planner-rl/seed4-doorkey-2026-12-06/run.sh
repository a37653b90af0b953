#!/bin/bash
# issue 40, seed 4 on DoorKey-8x8 (README.md here): one arm's training run, then its end model's held-out
# evaluation on the three tasks, one after another. Resumable: run it again (the training run resumes from its
# folder's state.json or round ledger, finished held-out episodes are kept).
# usage: run.sh grpo|rft     (started in its own session: setsid nohup ... &, then autogroup weight 5)
set -e
ARM=$1
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
PY=/work/main/.venv/bin/python
R=evals/results/planner-rl/seed4-doorkey-2026-12-06
case $ARM in
  grpo) OUT=runs/rl-seed4-doorkey PORT=8175
        M=/work/wt/rl/$OUT/iter-3/polar-planner-s4o-rl-doorkey-it3.gguf ;;
  rft)  OUT=runs/rft-seed4-doorkey PORT=8178
        M=/work/wt/rl/$OUT/round-1/finetune/polar-planner-s4o-rft-doorkey.gguf ;;
  *) echo "usage: run.sh grpo|rft" >&2; exit 2 ;;
esac
mkdir -p $OUT
# the start model is seed 4's registered SFT model; each arm reads (and the baseline registers into) its own
# copy of the run folder's registry, so runs/pt-seed4-order is never written
[ -f $OUT/models.json ] || cp runs/pt-seed4-order/models.json $OUT/models.json
export POLAR_MODELS=/work/wt/rl/$OUT/models.json
echo "start $ARM $(date -u)"
if [ $ARM = grpo ]; then
  $PY -m polar llm rl evals/planner-training/rl-seed4-doorkey.yaml --out $OUT
else
  $PY -m polar llm improve evals/planner-training/rft-seed4-doorkey.yaml --out $OUT --skip-start
fi
echo "trained $ARM $(date -u)"
declare -A TASK=([dk8]=DoorKey-8x8 [up]=UnlockPickup [bup]=BlockedUnlockPickup)
i=0
for T in dk8 up bup; do   # the task below the bar first
  $PY benchmarks/planner_rl_heldout.py eval --out /work/wt/rl/runs/heldout-bar --episodes 20 --parallel 8 \
    --port $((PORT + i)) --label s4o-$ARM-$T --model $M --task minigrid:MiniGrid-${TASK[$T]}-v0
  cp runs/heldout-bar/s4o-$ARM-$T/evaluation.json $R/eval-s4o-$ARM-$T.json
  i=$((i + 1))
done
echo "done $ARM $(date -u)"
