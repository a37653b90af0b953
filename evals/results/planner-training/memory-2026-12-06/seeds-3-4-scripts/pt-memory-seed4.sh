#!/usr/bin/env bash
# docs/memory.md, "Seeds 1 and 2: the plan and the rule": seed 4, the same per-seed command (resumable).
cd "$(dirname "$0")/.."
PYTHONPATH=. .venv/bin/python benchmarks/planner_training.py --out runs/pt-memory-seed4 --seed 4 \
    --name polar-planner-memory-s4 --observation memory --stages teacher,dataset,sft --threads 1 \
    --token-budget 420000 --max-length 512 --lr 1e-3 --lora-layers 10 --sft-eval-examples 40 --max-decisions 20 \
    --rounds 1 --episodes 3 --round-token-budget 30000 --no-round-eval --port 8743 --server-threads 1
