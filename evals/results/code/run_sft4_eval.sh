# Run 4's SFT model (docs/code-mode.md, "Run 4"), docker, resumable (rerun it): the validation seeds
# 100-104 (the shipped-model rule), then MountainCar's held-out seeds 1000-1019 (for the report only).
cd "$(dirname "$0")/../../.." || exit 1
PYTHONPATH=$PWD nice -n 2 polar code eval --model code-sft@4 --out evals/results/code/code-sft4-seed0-validation --seeds 100-104 --k 3 --backend docker --port 8063
PYTHONPATH=$PWD nice -n 2 polar code eval --model code-sft@4 --out evals/results/code/code-sft4-seed0-mountaincar --tasks mountaincar --seeds 1000-1019 --k 3 --backend docker --port 8063
