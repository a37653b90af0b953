#!/bin/bash
# issue 40, a new observation format, a screen (README.md here): the shipped predicates-trained polar-planner
# sampled at T = 1.0 in memory mode on DoorKey-8x8 (odometry), one GRPO-shaped group of 8 on a training start
# state (evals/planner-training/rl-screen-memory-doorkey.yaml). Only the sample stage is wanted: once state.json
# records it (its server stopped by then), the run's process is stopped, before any update. From the repository
# root; resumable: run again (finished episodes are kept).
cd "$(dirname "$0")/../../../.."
OUT=runs/screen-memory-doorkey R=evals/results/planner-rl/screen-memory-doorkey-2026-12-07
mkdir -p $OUT
echo "start $(date -u)"
PYTHONPATH=. .venv/bin/python -m polar llm rl evals/planner-training/rl-screen-memory-doorkey.yaml --out $OUT &
PID=$!
sampled() { python3 -c "import json,sys; s=json.load(open('$OUT/state.json'))['iterations']; sys.exit(0 if 'sample' in s.get('1', {}) else 1)" 2>/dev/null; }
while kill -0 $PID 2>/dev/null && ! sampled; do sleep 5; done
kill $PID 2>/dev/null; wait $PID 2>/dev/null
cp $OUT/state.json $R/state.json
echo "sampled $(date -u)"
