# Run 3 (the copyable prompt and programs, issue 47's second round): the data, the SFT, then
# run_sft_eval.sh code-sft@3 code-sft3-seed0 (validation seeds 100-104, then held-out 1000-1019).
cd "$(dirname "$0")/../../.." || exit 1
PYTHONPATH=$PWD polar code dataset --out runs/code/data3 --per-task 110 --val-per-task 4 --seed 0
PYTHONPATH=$PWD nice -n 5 polar llm finetune --data runs/code/data3 --out code-sft --base smollm2-135m --epochs 2 --lr 1e-3 \
    --lora-layers 16 --threads 1 --max-minutes 40 --work-dir runs/code/sft3 --eval-examples 20 --resume
