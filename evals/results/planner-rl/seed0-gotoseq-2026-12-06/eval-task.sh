#!/bin/bash
# The held-out evaluation on BabyAI-GoToSeqS5R2 (as ../seed4-doorkey-2026-12-06/eval-task.sh): greedy, episode seeds
# 100000-100019, 8 in flight, 1 server thread, at most 20 decisions, into runs/heldout-bar/<label>.
# usage: eval-task.sh sft|itN PORT   (sft: the start model polar-planner-s0o; itN: GRPO iteration N's model)
# Resumable: finished episodes are kept.
WHICH=$1 PORT=$2
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
R=evals/results/planner-rl/seed0-gotoseq-2026-12-06
case $WHICH in
  sft) M=/work/wt/rl/runs/pt-seed0-order/sft/polar-planner-s0o.gguf LABEL=s0o-sft-gts ;;
  it[0-9]) N=${WHICH#it}
       M=/work/wt/rl/runs/rl-seed0-gotoseq/iter-$N/polar-planner-s0o-rl-gotoseq-it$N.gguf LABEL=s0o-grpo-it$N-gts ;;
  *) echo "usage: eval-task.sh sft|itN PORT" >&2; exit 2 ;;
esac
/work/main/.venv/bin/python benchmarks/planner_rl_heldout.py eval --out /work/wt/rl/runs/heldout-bar --episodes 20 \
  --parallel 8 --port $PORT --label $LABEL --model $M --task minigrid:BabyAI-GoToSeqS5R2-v0 \
  && cp runs/heldout-bar/$LABEL/evaluation.json $R/eval-$LABEL.json
echo "done $LABEL $(date -u)"
