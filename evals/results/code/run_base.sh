# The floor: the base model in code mode (resumable: rerun the same command).
cd "$(dirname "$0")/../../.." && PYTHONPATH=$PWD polar code eval --model smollm2-135m --out evals/results/code/base-smollm2 --seeds 1000-1004 --k 1 --backend docker --port 8033
