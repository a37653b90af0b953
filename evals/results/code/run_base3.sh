# The floor under the copyable prompt (run 3's): the built-in base models in code mode, held-out
# seeds 1000-1004, k 1 (resumable: rerun the same command). gemma3-270m first, then smollm2-135m.
cd "$(dirname "$0")/../../.." || exit 1
PYTHONPATH=$PWD polar code eval --model gemma3-270m --out evals/results/code/base-gemma3 --seeds 1000-1004 --k 1 --backend docker --port 8037
PYTHONPATH=$PWD polar code eval --model smollm2-135m --out evals/results/code/base-smollm2-prompt3 --seeds 1000-1004 --k 1 --backend docker --port 8037
