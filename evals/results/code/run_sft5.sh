# Run 5 (run 4's MountainCar family with velocity scaled by 100, k written as 1-6; the other
# four tasks' draws are run 3's, byte for byte): the data, the SFT (run 3's recipe), then
# run_rl.sh 0 N code-sft@5 runs/code/rl5-seed0 3e-4. Resumable: rerun the same command.
cd "$(dirname "$0")/../../.." || exit 1
PYTHONPATH=$PWD polar code dataset --out runs/code/data5 --per-task 110 --val-per-task 4 --seed 0
PYTHONPATH=$PWD nice -n 2 polar llm finetune --data runs/code/data5 --out code-sft --base smollm2-135m --epochs 2 --lr 1e-3 \
    --lora-layers 16 --threads 1 --max-minutes 40 --work-dir runs/code/sft5 --eval-examples 20 --resume
