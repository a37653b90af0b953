#!/bin/bash
# issue 40: seeds 0 and 1, then 3 and 4, two at a time (each script resumes from its run folder when re-run).
# Each seed in its own session (setsid): the kernel's autogroup scheduling shares the CPU between sessions
# first, so two seeds in one session got half the CPU one seed in its own session gets.
cd /work/wt/rl
setsid -w runs/pt-seed0-order.sh & setsid -w runs/pt-seed1-order.sh & wait
setsid -w runs/pt-seed3-order.sh & setsid -w runs/pt-seed4-order.sh & wait
echo "all done $(date -u)" >> runs/pt-order-all.log
