"""Run 4's MountainCar gain ranges (docs/code-mode.md, "Run 4"): the share of drawn programs that
reach the flag from every start, run 3's family against run 4's.

    PYTHONPATH=$PWD python evals/results/code/sft/mountaincar_gains.py

MountainCar-v0's physics, vectorised over programs x starts (201 starts evenly over the reset
range [-0.6, -0.4], velocity 0, 200 steps), checked step for step against gymnasium's env on
a sample of (program, start) pairs before it is trusted.
"""

from __future__ import annotations

import numpy as np


def flag_steps(k1: np.ndarray, k0: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Steps to the flag of `2 if velocity + k1 * position + k0 > 0 else 0` (0: never, in 200)."""
    pos = np.tile(starts, (len(k1), 1))
    vel = np.zeros_like(pos)
    steps = np.zeros(pos.shape, dtype=int)
    for t in range(1, 201):
        push = np.where(vel + k1[:, None] * pos + k0[:, None] > 0, 1, -1)
        nv = np.clip(vel + push * 0.001 - 0.0025 * np.cos(3 * pos), -0.07, 0.07)
        npos = np.clip(pos + nv, -1.2, 0.6)
        nv = np.where((npos == -1.2) & (nv < 0), 0.0, nv)
        live = steps == 0
        pos, vel = np.where(live, npos, pos), np.where(live, nv, vel)
        steps[live & (pos >= 0.5) & (vel >= 0)] = t
    return steps


def check_against_gym(rng: np.random.Generator, n: int = 30) -> None:
    """The vectorised physics agree with gymnasium's MountainCar-v0 (steps to the flag, or never)."""
    import gymnasium as gym

    env = gym.make("MountainCar-v0")
    for _ in range(n):
        k1, k0 = rng.uniform(-0.06, 0.02), rng.uniform(-0.04, 0.01)
        env.reset(seed=int(rng.integers(1 << 30)))
        state = env.unwrapped.state
        start = float(state[0])
        done, t, term = False, 0, False
        while not done:
            pos, vel = env.unwrapped.state
            _, _, term, trunc, _ = env.step(2 if vel + k1 * pos + k0 > 0 else 0)
            t, done = t + 1, term or trunc
        got = int(flag_steps(np.array([k1]), np.array([k0]), np.array([start]))[0, 0])
        assert got == (t if term else 0), (k1, k0, start, got, t, term)
    env.close()


def main() -> None:
    rng = np.random.default_rng(0)
    check_against_gym(rng)
    starts = np.linspace(-0.6, -0.4, 201)

    def two_digits(x: np.ndarray) -> np.ndarray:  # as the drawn programs write them (.2g)
        return np.array([float(f"{v:.2g}") for v in x])

    n = 3000
    k1, k0 = two_digits(rng.uniform(-0.02, 0.02, n)), two_digits(rng.uniform(-0.01, 0.01, n))
    old = flag_steps(k1, k0, starts) > 0
    k, p = two_digits(rng.uniform(0.01, 0.06, n)), two_digits(rng.uniform(0.45, 0.6, n))
    new = flag_steps(-k, -k * p, starts) > 0  # velocity - k * (position + p)
    print(
        f"run 3 (velocity + k1 * position + k0, k1 in +-0.02, k0 in +-0.01): {old.all(1).mean():.3f} of "
        f"{n} draws reach the flag from all 201 starts; {old.mean():.3f} of (draw, start) pairs"
    )
    print(
        f"run 4 (velocity - k * (position + p), k in [0.01, 0.06], p in [0.45, 0.6]): {new.all(1).mean():.3f} "
        f"of {n} draws from all 201 starts; {new.mean():.3f} of pairs"
    )


if __name__ == "__main__":
    main()
