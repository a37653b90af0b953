import sys

from polar.evals.code_tasks import TASKS, make_task_harness


def play(task, prog, seeds):
    ns = {}
    exec(prog, ns)
    act = ns["act"]
    t = TASKS[task]
    out = []
    for s in seeds:
        h = make_task_harness(t)
        obs, _ = h.reset(seed=s)
        ret = 0.0
        term = False
        for _ in range(t.max_steps):
            a = act(obs)
            if isinstance(a, list):
                import numpy as np

                a = np.clip(
                    np.array(a, dtype=np.float32),
                    -2 if task == "pendulum" else -1,
                    2 if task == "pendulum" else 1,
                )
            obs, r, term, trunc, _ = h.step(a)
            ret += r
            if term or trunc:
                break
        out.append((ret, t.success(ret, term)))
        h.close()
    return out


if __name__ == "__main__":
    task = sys.argv[1]
    prog = sys.argv[2].replace("\\n", "\n")
    print(play(task, prog, range(int(sys.argv[3]) if len(sys.argv) > 3 else 5)))
