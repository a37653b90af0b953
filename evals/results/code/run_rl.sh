# GRPO from the SFT code model, run seed $1 (resumable: rerun the same command; --iterations may grow).
cd "$(dirname "$0")/../../.." && PYTHONPATH=$PWD polar code rl --model code-sft@1 --out runs/code/rl-seed$1 --iterations ${2:-4} --group-size 6 --seed $1 --backend docker --port 8035
