"""Replay run 3's design-time Acrobot episodes (deterministic: seeded draws, seeded envs) and count their env steps."""

import random

from play import play

from polar.evals.code_programs import draw_programs


def g(r, lo, hi):
    return f"{r.uniform(lo, hi):.2g}"


H = "def act(obs):\n    cos1, sin1, cos2, sin2, w1, w2 = obs\n"
variants = [  # (shape, draws) in the order they were run; each draw played on seeds 0-2
    (
        lambda r: (
            H + f"    u = {g(r, -1, 2)} * w1 + {g(r, -1, 2)} * w2\n    return 2 if u > 0 else 0\n"
        ),
        30,
    ),
    (
        lambda r: (
            H
            + f"    u = {g(r, -1, 2)} * w1 + {g(r, -1, 2)} * w2 + {g(r, -2, 2)} * sin2\n    return 2 if u > 0 else 0\n"
        ),
        30,
    ),
    (
        lambda r: (
            H
            + f"    u = {g(r, -1.5, 0.5)} * w1 + {g(r, -1, 1)} * w2\n    return 2 if u > 0 else 0\n"
        ),
        30,
    ),
    (
        lambda r: (
            H
            + f"    u = {g(r, -1.5, 0.2)} * w1 + {g(r, -0.6, 1)} * w2\n    return 2 if u > 0 else 0\n"
        ),
        40,
    ),
]
steps = eps = 0


def count(prog, seeds):
    global steps, eps
    for ret, _ in play("acrobot", prog, seeds):
        steps += int(-ret) if ret > -500 else 500
        eps += 1  # Acrobot: -1 per step; -500 = the 500-step limit


for shape, n in variants:
    r = random.Random(0)
    for _ in range(n):
        count(shape(r), range(3))
count(
    "def act(obs):\n    cos1, sin1, cos2, sin2, w1, w2 = obs\n    return 2 if w1 > 0 else 0\n",
    range(10),
)
count(
    "def act(obs):\n    cos1, sin1, cos2, sin2, w1, w2 = obs\n    return 2 if w1 + 0.5*w2 > 0 else 0\n",
    range(10),
)
# share.py, twice: the first ranges (variant 3's), then the committed ones: 24 programs x seeds 0-2, drawn by draw_programs
r = random.Random("acrobot:0")
seen = []
while len(seen) < 24:
    p = variants[2][0](r)
    if p not in seen:
        seen.append(p)
for p in seen:
    count(p, range(3))
for p in draw_programs("acrobot", 24, 0):
    count(p, range(3))
print(f"acrobot design-time: {eps} episodes, {steps} env steps")
