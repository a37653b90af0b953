#!/bin/bash
# issue 40, beyond the teacher (README.md here): GRPO on BabyAI-GoToSeqS5R2 from seed 0's SFT model. Iteration 1's
# sample stage is the screen: if it solved 0/8 or 8/8 the run is stopped (by its process id) before any update,
# since a group with one outcome gives GRPO's reward no signal. Otherwise the run goes on to ITERS iterations
# (default 2, this session's budget; the recipe's 3 by ITERS=3). Resumable: the same command again.
# usage: run.sh   (started in its own session: setsid nohup ... &, then autogroup weight 5)
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
OUT=runs/rl-seed0-gotoseq R=evals/results/planner-rl/seed0-gotoseq-2026-12-06
ITERS=${ITERS:-2}
mkdir -p $OUT
# the start model is seed 0's registered SFT model, read through a copy of its registry (runs/pt-seed0-order untouched)
[ -f $OUT/models.json ] || cp runs/pt-seed0-order/models.json $OUT/models.json
export POLAR_MODELS=/work/wt/rl/$OUT/models.json
echo "start $(date -u)"
/work/main/.venv/bin/python -m polar llm rl evals/planner-training/rl-seed0-gotoseq.yaml --out $OUT --iterations $ITERS &
PID=$!
# exit 0: iteration 1 sampled, one outcome only (stop); 1: both outcomes or not sampled yet
one_outcome() { python3 -c "
import json, sys
s = json.load(open('$OUT/state.json'))['iterations'].get('1', {}).get('sample')
sys.exit(0 if s and s['success'] in (0.0, 1.0) else 1)" 2>/dev/null; }
sampled() { python3 -c "
import json, sys
sys.exit(0 if 'sample' in json.load(open('$OUT/state.json'))['iterations'].get('1', {}) else 1)" 2>/dev/null; }
while kill -0 $PID 2>/dev/null && ! sampled; do sleep 5; done
if one_outcome; then kill $PID 2>/dev/null; echo "screen: one outcome in 8, stopped before the update $(date -u)"; fi
wait $PID
echo "exit $? $(date -u)"
cp $OUT/state.json $R/state.json
for f in results.json metrics.jsonl; do [ -f $OUT/$f ] && cp $OUT/$f $R/$f; done
