# Run 4 (MountainCar's family pinned to gains that reach the flag from every start; the other
# four tasks' draws are run 3's, byte for byte): the data, the SFT (run 3's recipe), then
# run_rl.sh 0 N code-sft@4 runs/code/rl4-seed0 3e-4. Resumable: rerun the same command.
cd "$(dirname "$0")/../../.." || exit 1
PYTHONPATH=$PWD polar code dataset --out runs/code/data4 --per-task 110 --val-per-task 4 --seed 0
PYTHONPATH=$PWD nice -n 2 polar llm finetune --data runs/code/data4 --out code-sft --base smollm2-135m --epochs 2 --lr 1e-3 \
    --lora-layers 16 --threads 1 --max-minutes 40 --work-dir runs/code/sft4 --eval-examples 20 --resume
