"""What Ray costs and when it pays: start time, resident memory, rollout throughput.

    .venv/bin/python benchmarks/rl_ray.py [--rounds 2] [--rollouts 6]

1. `ray.init` of a new local Ray in a fresh process, three ways, alternating: Ray's
   defaults (`ray.init(num_cpus=2)`), Polar's previous call (no dashboard, no log forwarding), and
   `polar.rl.common.ray_session.init_ray` (also no metrics collection, WARNING logs, no usage
   statistics, token auth without the banner). Reported: seconds for `ray.init` plus the
   first task, the resident memory (RSS) of the driver and every process Ray started,
   the number of those processes, and the lines Ray printed on stderr.
2. PPO rollout throughput on CartPole-v1 (8 envs x 128 steps per rollout and worker):
   the serial collector vs `WorkerPool` with 1 and 2 Ray workers, env steps per second and
   the ratio to serial (one policy, weights shipped every rollout as in training).

Writes benchmarks/results/rl_ray.json (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

INIT_MODES = {
    "ray-defaults": "import ray; ray.init(address='local', num_cpus=2)",
    "polar-before": ("import ray; ray.init(address='local', num_cpus=2, object_store_memory=200 * 1024 * 1024, "
                     "include_dashboard=False, log_to_driver=False)"),
    "polar-lean": "from polar.rl.common.ray_session import init_ray; init_ray(num_cpus=2)",
}

PROBE = """
import json, sys, time
import psutil
import ray
t0 = time.perf_counter()
{init}
@ray.remote
def ping():
    return 1
ray.get(ping.remote())
dt = time.perf_counter() - t0
time.sleep(2)  # let late starters (agents) come up before counting memory
me = psutil.Process()
procs = [me, *me.children(recursive=True)]
rss = 0
for p in procs:
    try:
        rss += p.memory_info().rss
    except psutil.Error:
        pass
print(json.dumps({{"init_s": dt, "rss_mb": rss / 2**20, "processes": len(procs) - 1}}))
ray.shutdown()
"""


def measure_init(mode: str, attempts: int = 3) -> dict[str, float]:
    for _ in range(attempts):  # on a loaded machine Ray's node start can time out; try again
        r = subprocess.run([sys.executable, "-c", PROBE.format(init=INIT_MODES[mode])],
                           capture_output=True, text=True, timeout=600)
        if r.returncode == 0:
            break
        print(f"{mode}: failed ({r.stderr.strip().splitlines()[-1][:200]}); again", flush=True)
    else:
        raise SystemExit(f"{mode}: {r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["stderr_lines"] = len([ln for ln in r.stderr.splitlines() if ln.strip()])
    return out


def rollout_throughput(rollouts: int) -> dict[str, float]:
    import ray
    import torch

    from polar.rl.common.envs import make_vector_env
    from polar.rl.common.ray_session import init_ray
    from polar.rl.common.rollout import Collector
    from polar.rl.common.workers import WorkerPool
    from polar.rl.policy import make_policy
    from polar.rl.ppo.collect import collect_ppo

    torch.set_num_threads(1)
    num_envs, num_steps = 8, 128
    env = make_vector_env(["gym:CartPole-v1"] * num_envs)
    policy = make_policy("ppo", env.single_observation_space, env.single_action_space)
    col = Collector(env, seed=0)
    collect_ppo(policy, col, num_steps)  # warm-up
    t0 = time.perf_counter()
    for _ in range(rollouts):
        collect_ppo(policy, col, num_steps)
    out = {"serial": rollouts * num_envs * num_steps / (time.perf_counter() - t0)}
    init_ray(num_cpus=2)
    for workers in (1, 2):
        pool = WorkerPool(["gym:CartPole-v1"] * workers, num_envs, {}, 0, policy.config())
        weights = lambda: ray.put({k: v.numpy() for k, v in policy.to_state()[0].items()})  # noqa: E731
        pool.collect(weights(), "polar.rl.ppo.collect:collect", num_steps)  # warm-up: actors up, envs made
        t0 = time.perf_counter()
        for _ in range(rollouts):
            pool.collect(weights(), "polar.rl.ppo.collect:collect", num_steps)
        out[f"ray_{workers}"] = rollouts * workers * num_envs * num_steps / (time.perf_counter() - t0)
        pool.close()
    ray.shutdown()
    return out


def figures(summary: dict[str, Any]) -> list[Figure]:
    """For scale: start time and resident memory of each way to start Ray, and rollout
    throughput of the serial collector and of 1 and 2 Ray workers (as a ratio to serial)."""
    figs = []
    for mode, m in summary["init"].items():
        figs += [Figure(f"ray.init + first task, {mode}", round(m["init_s"], 2), "s"),
                 Figure(f"resident memory of the driver and Ray's processes, {mode}", round(m["rss_mb"]), "MB")]
    tp = summary["rollout_steps_per_s"]
    figs.append(Figure("PPO rollout env steps/s on CartPole-v1, serial collector", round(tp["serial"]), "steps/s"))
    figs += [Figure(f"PPO rollout env steps/s, {k.removeprefix('ray_')} Ray worker(s) / serial",
                    round(v / tp["serial"], 2), "x") for k, v in tp.items() if k != "serial"]
    return figs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rollouts", type=int, default=6)
    args = ap.parse_args(argv)
    init: dict[str, list[dict[str, float]]] = {m: [] for m in INIT_MODES}
    for r in range(args.rounds):
        modes = list(INIT_MODES) if r % 2 == 0 else list(reversed(INIT_MODES))
        for mode in modes:
            res = measure_init(mode)
            init[mode].append(res)
            print(f"round {r} {mode:13s} init+first task {res['init_s']:5.1f} s  RSS {res['rss_mb']:6.0f} MB  "
                  f"{res['processes']:2d} processes  {res['stderr_lines']} stderr lines", flush=True)
    summary: dict[str, object] = {"init": {m: {k: statistics.median(x[k] for x in v) for k in v[0]}
                                           for m, v in init.items()}}
    base = summary["init"]["polar-before"]  # type: ignore[index]
    lean = summary["init"]["polar-lean"]  # type: ignore[index]
    print(f"init_ray vs the previous call: {lean['init_s'] / base['init_s']:.2f}x the start time, "
          f"{lean['rss_mb'] - base['rss_mb']:+.0f} MB resident ({lean['rss_mb']:.0f} vs {base['rss_mb']:.0f} MB)")
    tp = rollout_throughput(args.rollouts)
    summary["rollout_steps_per_s"] = tp
    for k, v in tp.items():
        print(f"rollouts {k:7s} {v:8.0f} env steps/s  ({v / tp['serial']:.2f}x serial)", flush=True)
    write_result("rl_ray", script_command("rl_ray.py", argv), figures(summary), summary)


if __name__ == "__main__":
    main()
