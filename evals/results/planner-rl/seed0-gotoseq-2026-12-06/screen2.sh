#!/bin/bash
# issue 40, beyond the teacher, the second GoToSeqS5R2 screen (README.md here): seed 0's retrained SFT model sampled at T = 1.0 on
# GoToSeqS5R2, two GRPO-shaped groups of 8 on two other training start states (rl-screen-s0o-gotoseq.yaml). Only
# the sample stage is wanted: once state.json records it (its server already stopped by then), the run's
# process is stopped by its id, before any update. Resumable: run again (finished episodes are kept).
cd /work/wt/rl
export POLAR_CACHE_DIR=/tmp/polar-cache-rl PYTHONPATH=/work/wt/rl
OUT=runs/screen-s0o-gotoseq R=evals/results/planner-rl/seed0-gotoseq-2026-12-06
mkdir -p $OUT
[ -f $OUT/models.json ] || cp runs/pt-seed0-order/models.json $OUT/models.json
export POLAR_MODELS=/work/wt/rl/$OUT/models.json
echo "start $(date -u)"
/work/main/.venv/bin/python -m polar llm rl evals/planner-training/rl-screen-s0o-gotoseq.yaml --out $OUT &
PID=$!
sampled() { python3 -c "import json,sys; s=json.load(open('$OUT/state.json'))['iterations']; sys.exit(0 if 'sample' in s.get('1', {}) else 1)" 2>/dev/null; }
while kill -0 $PID 2>/dev/null && ! sampled; do sleep 5; done
kill $PID 2>/dev/null; wait $PID 2>/dev/null
cp $OUT/state.json $R/screen2-state.json
echo "sampled $(date -u)"
