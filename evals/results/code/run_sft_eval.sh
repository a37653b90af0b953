# An SFT code model (run_sft_eval.sh MODEL NAME), docker sandbox (resumable: rerun it): the validation seeds 100-104 (the
# shipped-model rule), then the held-out seeds 1000-1019, 20 episodes per task.
cd "$(dirname "$0")/../../.." || exit 1
MODEL=${1:-code-sft@2} NAME=${2:-code-sft2-seed0}
PYTHONPATH=$PWD polar code eval --model $MODEL --out evals/results/code/$NAME-validation --seeds 100-104 --k 3 --backend docker --port 8034
PYTHONPATH=$PWD polar code eval --model $MODEL --out evals/results/code/$NAME --seeds 1000-1019 --k 3 --backend docker --port 8034
