# rl3-seed0's later iterations on the validation seeds (the shipped-model rule), docker, resumable:
#   bash evals/results/code/run_rl3_val.sh 5 6
cd "$(dirname "$0")/../../.." || exit 1
for it in "$@"; do
  PYTHONPATH=$PWD polar code eval --model runs/code/rl3-seed0/iter-$it/code-rl-it$it.gguf --out evals/results/code/rl3-seed0-it$it-validation \
      --seeds 100-104 --k 3 --backend docker --port 8038
done
