import sys

from polar.evals.code_programs import draw_programs
from polar.evals.code_runner import run_program
from polar.evals.code_tasks import TASKS
from polar.sandboxes.profiles import SandboxProfile

for t in sys.argv[1:]:
    progs = draw_programs(t, 24, 0)
    ok = [
        all(e.success for e in run_program(TASKS[t], p, [0, 1, 2], SandboxProfile()).episodes)
        for p in progs
    ]
    print(
        t,
        sum(ok),
        "/ 24 =",
        round(sum(ok) / 24, 2),
        "longest",
        max(len(p) for p in progs),
        flush=True,
    )
