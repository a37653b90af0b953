# The SFT code model, docker sandbox (resumable: rerun it): the validation seeds 100-104 (the
# shipped-model rule), then the held-out seeds 1000-1019, 20 episodes per task.
cd "$(dirname "$0")/../../.." || exit 1
PYTHONPATH=$PWD polar code eval --model code-sft@1 --out evals/results/code/code-sft-seed0-validation --seeds 100-104 --k 3 --backend docker --port 8034
PYTHONPATH=$PWD polar code eval --model code-sft@1 --out evals/results/code/code-sft-seed0 --seeds 1000-1019 --k 3 --backend docker --port 8034
