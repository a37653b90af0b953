# The SFT code model on the held-out seeds, 20 episodes per task, docker (resumable: rerun it).
cd "$(dirname "$0")/../../.." && PYTHONPATH=$PWD polar code eval --model code-sft@1 --out evals/results/code/code-sft-seed0 --seeds 1000-1019 --k 3 --backend docker --port 8034
