# GRPO from an SFT code model (resumable: rerun the same command; ITERATIONS may grow):
#   bash evals/results/code/run_rl.sh SEED ITERATIONS MODEL OUT [LR]
# rl-seed0 (from code-sft@1, killed in iteration 1's convert stage): run_rl.sh 0 4 code-sft@1 runs/code/rl-seed0
# rl2-seed0 (from code-sft@2):                                       run_rl.sh 0 8 code-sft@2 runs/code/rl2-seed0 3e-4
# rl3-seed0 (from code-sft@3, the copyable programs):                 run_rl.sh 0 8 code-sft@3 runs/code/rl3-seed0 3e-4
# rl5-seed0 (from code-sft@5, MountainCar pinned):                   run_rl.sh 0 16 code-sft@5 runs/code/rl5-seed0 3e-4
cd "$(dirname "$0")/../../.." && PYTHONPATH=$PWD polar code rl --model "$3" --out "$4" --iterations "$2" --group-size 6 --seed "$1" --lr "${5:-1e-4}" --backend docker --port 8035
