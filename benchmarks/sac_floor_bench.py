"""What bounds Polar's SAC update on this CPU: its matrix products alone, and torch.compile.

    .venv/bin/python benchmarks/sac_floor_bench.py [--train-steps 1200] [--updates 200] [--rounds 3]
                                                   [--seed 10] [--profile-steps 3000]

Trains Polar's SAC on Pendulum-v1 (rl_vs_sb3.py's hyper-parameters, one torch thread) for
`--train-steps` env steps, then, from that state, round by round:
- **eager**: `SAC.update` as training runs it (the gradients written out, polar/rl/sac/sac_grad.py),
  ms per update;
- **autograd**: the same update through autograd (`sac.analytic_grad: false`);
- **ATen ops**: how many operators one update dispatches (each costs its dispatch, a few
  microseconds here, whatever its size), and how many of them are matrix products;
- **matmuls only**: every matrix product one update launches (mm, addmm, bmm, baddbmm, with
  the shapes torch's profiler records for one update), replayed on random tensors of the
  same shapes: the time the update cannot go below without changing its arithmetic;
- **matmuls + ReLUs + Adam**: those products, every ReLU forward and backward at its
  recorded shape, and the update's three fused Adam steps on the trained weights: what any
  rewrite of the update in eager fp32 (a written-out gradient, batched networks) still runs;
- **compiled**: the critic and actor losses through `torch.compile` (inductor, CPU), their
  backward and the same Adam steps; the compile time (cold: an empty inductor cache) is
  reported on its own;
- **one 256x256x256 product**: torch's BLAS on the update's largest shape alone, in us and
  GFLOP/s, and the update's matrix products counted in such products (their flops over one's).
Then (`--profile-steps`, 0: skip) it runs rl_vs_sb3.py's per-phase profile of both sides in
the same process, Polar's then SB3's, and sets the floor against SB3's env step. The **floor
ratios** are (the matrix products per update, times the updates per env step, plus Polar's
own env-step and replay-sample phases) over SB3's ms per env step, and the same with the
ReLUs and Adam steps added: what the update's own products, at their shapes and in their
order, leave for Polar / SB3 however the rest is written. A third ratio puts those products'
flops at the one-product speed instead: the bound for a kernel that ran every product, thin
ones included, as fast as the square one alone. SB3's time depends on the seed: its Adam
moments decay through the subnormal range, which x86 arithmetic handles slowly.
Prints ms per update and writes benchmarks/results/sac_floor_bench.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402
from rl_vs_sb3 import polar_config, run_polar, run_sb3  # noqa: E402

from polar.rl.trainer import Trainer  # noqa: E402

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
RELUS = ("aten::relu", "aten::relu_", "aten::threshold_backward")
# each op on its tensor inputs, less an `out=` tensor the profiler records as one more input
OPS = {"aten::mm": lambda a, b, *out: torch.mm(a, b), "aten::bmm": lambda a, b, *out: torch.bmm(a, b),
       "aten::addmm": lambda c, a, b, *out: torch.addmm(c, a, b),
       "aten::baddbmm": lambda c, a, b, *out: torch.baddbmm(c, a, b),
       "aten::relu": torch.relu, "aten::relu_": torch.relu_,
       "aten::threshold_backward": lambda g, x, *out: torch.ops.aten.threshold_backward(g, x, 0)}


def op_shapes(update: Callable[[], None], names: tuple[str, ...]) -> list[tuple[str, list[list[int]]]]:
    """The (op, tensor input shapes) of every call of the ops `names` one `update` launches."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        update()
    return [(e.name, [list(s) for s in e.input_shapes if s]) for e in prof.events() if e.name in names]


def aten_ops(update: Callable[[], None]) -> tuple[int, int]:
    """How many ATen operators one `update` dispatches (views and in-place ops included), and
    how many of those are matrix products (`MATMULS`)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    names: list[str] = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            names.append(func.overloadpacket._qualified_op_name)
            return func(*args, **(kwargs or {}))

    with Count():
        update()
    return len(names), sum(name in MATMULS for name in names)


def replay(shapes: list[tuple[str, list[list[int]]]], then: Callable[[], None] | None = None) -> Callable[[], None]:
    """One call runs the same ops on random tensors of the recorded shapes (then `then`)."""
    calls = [(OPS[name], [torch.randn(s) for s in dims]) for name, dims in shapes]

    def run() -> None:
        for fn, args in calls:
            fn(*args)
        if then is not None:
            then()
    return run


def adam_steps(trainer: Trainer) -> Callable[[], None]:
    """The update's three Adam steps (critics, actor, temperature) on the gradients its last
    call left: the fused kernels, as `SAC._minimize` runs them."""
    steps = [s for s in trainer.algo.sac._steps.values() if s is not None]

    def run() -> None:
        for s in steps:
            s.step()
    return run


def compiled_update(trainer: Trainer) -> Callable[[], None]:
    """SAC.update's critic and actor steps with both losses through torch.compile."""
    sac, policy = trainer.algo.sac, trainer.policy
    gamma = sac.cfg.gamma

    def critic_loss(obs, next_obs, actions, rewards, terminated, alpha):
        with torch.no_grad():
            next_a, next_logp = policy.sample(next_obs)
            target_min = sac.target_q(next_obs, next_a).min(0).values - alpha * next_logp
            target = rewards + gamma * (1.0 - terminated) * target_min
        return 0.5 * (policy.q(obs, actions) - target).pow(2).mean(1).sum()

    def actor_loss(obs, alpha):
        a_pi, logp_pi = policy.sample(obs)
        return (alpha * logp_pi - policy.q(obs, a_pi).min(0).values).mean(), logp_pi

    critic_c, actor_c = torch.compile(critic_loss), torch.compile(actor_loss)

    def update() -> None:
        b = trainer.algo.replay.sample(256)
        obs, next_obs = policy.prepare(b.obs), policy.prepare(b.next_obs)
        alpha = sac.log_alpha.detach().exp()
        sac._minimize(critic_c(obs, next_obs, b.actions, b.rewards, b.terminated, alpha), sac.q_optimizer)
        for p in sac.q_params:
            p.requires_grad_(False)
        loss, logp = actor_c(obs, alpha)
        for p in sac.q_params:
            p.requires_grad_(True)
        sac._minimize(loss, sac.actor_optimizer)
        alpha_loss = -(sac.log_alpha.exp() * (logp.detach() + sac.target_entropy)).mean()
        sac._minimize(alpha_loss, sac.alpha_optimizer)
        with torch.no_grad():
            torch._foreach_lerp_(sac.target_params, sac.q_params, sac.cfg.tau)
    return update


def ms_per_call(fn: Callable[[], None], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e3


def figures(d: dict) -> list[Figure]:
    eager, mm, comp = (statistics.median(d[k]) for k in ("eager_ms", "matmul_ms", "compiled_ms"))
    label = "SAC Pendulum update (256 x 2x256 MLPs)"
    floor, autograd = statistics.median(d["floor_ms"]), statistics.median(d["autograd_ms"])
    return [Figure(f"{label}, eager", round(eager, 2), "ms", better="lower"),
            Figure(f"{label}, autograd", round(autograd, 2), "ms", better="lower"),
            Figure(f"{label}, ATen operators dispatched per update (eager)", d["aten_ops"], "ops", better="lower"),
            Figure(f"{label}, matrix products among them", d["aten_matmuls"], "ops"),
            Figure(f"{label}, written-out gradients / autograd", round(eager / autograd, 3), "x", better="lower"),
            Figure(f"{label}, its matrix products alone / eager", round(mm / eager, 3), "x"),
            Figure(f"{label}, its matrix products alone", round(mm, 2), "ms", better="lower"),
            Figure(f"{label}, its matrix products, ReLUs and Adam steps alone / eager", round(floor / eager, 3), "x"),
            Figure(f"{label}, its matrix products, ReLUs and Adam steps alone", round(floor, 2), "ms", better="lower"),
            Figure(f"{label}, torch.compile / eager", round(comp / eager, 3), "x", better="lower"),
            Figure(f"{label}, torch.compile's compile time", round(d["compile_s"], 1), "s", better="lower"),
            *gemm_figures(d), *floor_figures(d, mm, floor)]


def square_gemm() -> Callable[[], None]:
    """One 256x256 by 256x256 fp32 product (the update's largest shape) into a fixed output."""
    a, b, c = torch.randn(256, 256), torch.randn(256, 256), torch.empty(256, 256)
    return lambda: torch.mm(a, b, out=c)


def gemm_figures(d: dict) -> list[Figure]:
    """How fast this CPU's BLAS runs the update's largest product: the scale of the floor."""
    if "gemm_us" not in d:
        return []
    us = statistics.median(d["gemm_us"])
    label = "256x256x256 fp32 matrix product (torch's BLAS, one thread)"
    return [Figure(f"{label}", round(us, 1), "us", better="lower"),
            Figure(f"{label}, GFLOP/s", round(2 * 256**3 / us / 1e3, 1), "GFLOP/s"),
            Figure("SAC Pendulum update's matrix products, in 256x256x256 products (flops)",
                   round(d["matmul_flops"] / (2 * 256**3), 2), "products")]


def matmul_flops(shapes: list[tuple[str, list[list[int]]]]) -> int:
    """The multiply-adds of the recorded products, twice: m k n per product ([..., m, k] by
    [..., k, n], batched ones times their batch; a bias or `out=` input adds nothing)."""
    flops = 0
    for name, dims in shapes:
        a, b = dims[1:3] if name in ("aten::addmm", "aten::baddbmm") else dims[:2]
        batch = a[0] if len(a) == 3 else 1
        flops += 2 * batch * a[-2] * a[-1] * b[-1]
    return flops


def floor_figures(d: dict, matmul_ms: float, floor_ms: float) -> list[Figure]:
    """Both sides' ms per env step in the per-phase profile and the floor ratios (module doc):
    with the matrix products alone, and with the ReLUs and Adam steps too."""
    if "profile" not in d:
        return []
    p = d["profile"]
    polar, sb3 = sum(p["polar"].values()), sum(p["sb3"].values())
    updates_per_step = (p["steps"] - p["learning_starts"]) / p["steps"]
    rest = p["polar"]["env"] + p["polar"]["sample"]
    label = f"SAC Pendulum per-phase profile ({p['steps']} env steps, seed {d['seed']})"
    figs = [Figure(f"{label}, SB3 ms per env step", round(sb3, 2), "ms", better="lower"),
            Figure(f"{label}, Polar ms per env step", round(polar, 2), "ms", better="lower"),
            Figure(f"{label}, Polar / SB3", round(polar / sb3, 3), "x", better="lower"),
            Figure(f"{label}, floor ratio: matrix products, env step and replay sample alone / SB3",
                   round((matmul_ms * updates_per_step + rest) / sb3, 3), "x"),
            Figure(f"{label}, floor ratio: matrix products, ReLUs, Adam, env step and replay sample "
                   "alone / SB3", round((floor_ms * updates_per_step + rest) / sb3, 3), "x")]
    if "gemm_us" in d:
        square_ms = d["matmul_flops"] / (2 * 256**3) * statistics.median(d["gemm_us"]) / 1e3
        figs.append(Figure(f"{label}, bound: the products' flops at one 256^3 product's speed, env step "
                           "and replay sample / SB3", round((square_ms * updates_per_step + rest) / sb3, 3), "x"))
    return figs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-steps", type=int, default=1200, help="env steps of SAC before timing")
    ap.add_argument("--updates", type=int, default=200, help="updates per timing block")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=10, help="of the training run and both profiles (rl_vs_sb3.py's "
                    "goal command uses 10: SB3's time depends on how many subnormal floats its run meets)")
    ap.add_argument("--profile-steps", type=int, default=3000,
                    help="env steps of each side's per-phase profile (rl_vs_sb3.py's), 0: skip it")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(polar_config("sac_pendulum", args.seed, args.train_steps), d)
        trainer.run()
    sac, fast = trainer.algo.sac, trainer.algo.sac._grad
    assert fast is not None, "the bench's policy takes the written-out gradients"

    def eager() -> None:
        sac._grad = fast
        sac.update(trainer.algo.replay.sample(256))

    def autograd() -> None:
        sac._grad = None
        sac.update(trainer.algo.replay.sample(256))
    eager()
    ops, op_matmuls = aten_ops(eager)
    shapes = op_shapes(eager, MATMULS)
    matmuls = replay(shapes)
    floor = replay(shapes + op_shapes(eager, RELUS), then=adam_steps(trainer))
    with tempfile.TemporaryDirectory() as cache:  # a cold compile: no graphs cached by an earlier run
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        t0 = time.perf_counter()
        compiled = compiled_update(trainer)
        for _ in range(3):  # compiles the forward and backward graphs (and the frozen-critic variant)
            compiled()
        compile_s = time.perf_counter() - t0
    out: dict[str, list[float]] = {"eager_ms": [], "autograd_ms": [], "matmul_ms": [], "floor_ms": [],
                                   "compiled_ms": [], "gemm_us": []}
    gemm = square_gemm()
    for r in range(args.rounds):
        for key, fn in (("eager_ms", eager), ("autograd_ms", autograd), ("matmul_ms", matmuls), ("floor_ms", floor),
                        ("compiled_ms", compiled)):
            out[key].append(ms_per_call(fn, args.updates))
        gemm()
        out["gemm_us"].append(ms_per_call(gemm, 20 * args.updates) * 1e3)
        print(f"round {r}: eager {out['eager_ms'][-1]:.2f} ms, autograd {out['autograd_ms'][-1]:.2f} ms, matrix products alone "
              f"{out['matmul_ms'][-1]:.2f} ms, + ReLUs and Adam {out['floor_ms'][-1]:.2f} ms, compiled "
              f"{out['compiled_ms'][-1]:.2f} ms per update; one 256^3 product {out['gemm_us'][-1]:.0f} us", flush=True)
    details = {"seed": args.seed, "train_steps": args.train_steps, "updates": args.updates, "aten_ops": ops, "aten_matmuls": op_matmuls,
               "matmul_calls": len(shapes), "matmul_flops": matmul_flops(shapes),
               "compile_s": compile_s, **out}
    if args.profile_steps:  # SB3 last: run_sb3 leaves subnormals unflushed on this thread
        _, _, polar_ph = run_polar("sac_pendulum", args.seed, phases=args.profile_steps)
        _, _, sb3_ph = run_sb3("sac_pendulum", args.seed, phases=args.profile_steps)
        details["profile"] = {"steps": args.profile_steps, "learning_starts": sac.cfg.learning_starts,
                              "polar": polar_ph, "sb3": sb3_ph}
    figs = figures(details)
    for f in figs:
        print(f"{f.what}: {f.value} {f.unit}")
    argv_run = ["--train-steps", str(args.train_steps), "--updates", str(args.updates), "--rounds", str(args.rounds),
                "--seed", str(args.seed), "--profile-steps", str(args.profile_steps)]
    write_result("sac_floor_bench", script_command("sac_floor_bench.py", argv_run), figs, details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
