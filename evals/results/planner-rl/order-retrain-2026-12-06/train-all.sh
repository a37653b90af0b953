#!/bin/bash
# issue 40: seeds 0 and 1, then 3 and 4, two at a time (each script resumes from its run folder when re-run)
cd /work/wt/rl
runs/pt-seed0-order.sh & runs/pt-seed1-order.sh & wait
runs/pt-seed3-order.sh & runs/pt-seed4-order.sh & wait
echo "all done $(date -u)" >> runs/pt-order-all.log
