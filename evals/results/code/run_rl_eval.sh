# An RL iteration's model on the validation seeds (the shipped-model rule), docker, resumable:
#   bash evals/results/code/run_rl_eval.sh RUN ITERATION      e.g. rl2-seed0 3
cd "$(dirname "$0")/../../.." || exit 1
[ "$3" = heldout ] || PYTHONPATH=$PWD polar code eval --model runs/code/$1/iter-$2/code-rl-it$2.gguf --out evals/results/code/$1-it$2-validation --seeds 100-104 --k 3 --backend docker --port 8036
# the held-out seeds, 20 episodes per task (for the run the shipped-model rule picks):
#   bash evals/results/code/run_rl_eval.sh RUN ITERATION heldout
[ "$3" = heldout ] && PYTHONPATH=$PWD polar code eval --model runs/code/$1/iter-$2/code-rl-it$2.gguf --out evals/results/code/$1-it$2 --seeds 1000-1019 --k 3 --backend docker --port 8036
