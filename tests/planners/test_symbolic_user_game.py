"""A user's own game and skills: the symbolic planner plans over what the manifests declare.

The game is the KeyDoor connector example (its own API, in its own process; predicates
`carrying(key)`, `open(door)`, `at(goal)`, `at(key)`, `next_to(door)`). The skill library
is the user's, in a scratch workspace: a walking policy with the user's own feature hook
(`hooks.keydoor_skills`, a file in the library), fitted here by behaviour cloning, shipped
as two skills (`walk_to` a key or the door; `walk_to_goal`, whose effect is the goal and
which needs the door open), and two primitives of the game's actions (`take`, `open_door`).
Nothing in Polar names any of them.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.agent import Agent
from polar.harnesses.registry import make_harness
from polar.planners.symbolic import SymbolicPlanner
from polar.rl.config import NetworkConfig
from polar.rl.policy import Policy, make_policy
from polar.skills.model import Skill
from polar.skills.store import SkillLibrary

KEYDOOR = Path(__file__).resolve().parents[2] / "harnesses" / "keydoor" / "keydoor.yaml"

HOOKS = '''
"""The user's feature hook: the next move of a shortest path to the target, one-hot."""
from collections import deque

import numpy as np

WALL, KEY, LOCKED, OPEN, GOAL, AGENT = 1, 2, 3, 4, 5, 6
MOVES = ((0, -1), (0, 1), (-1, 0), (1, 0))  # the game's actions 0-3: up, down, left, right


def _arrived(grid, cell, target):
    if target == "door":
        return any(grid[cell[1] + dy, cell[0] + dx] in (LOCKED, OPEN) for dx, dy in MOVES)
    return grid[cell[1], cell[0]] == {"key": KEY, "goal": GOAL}[target]


def next_move(grid, target):
    ys, xs = np.nonzero(grid == AGENT)
    start = (int(xs[0]), int(ys[0]))
    first = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell != start and _arrived(grid, cell, target):
            return first[cell]
        for move, (dx, dy) in enumerate(MOVES):
            nxt = (cell[0] + dx, cell[1] + dy)
            if nxt not in first and grid[nxt[1], nxt[0]] not in (WALL, LOCKED):
                first[nxt] = move if cell == start else first[cell]
                queue.append(nxt)
    return 4  # no way (or there already): the "stay" feature


def features(obs, args, harness=None, target=None):
    onehot = np.zeros(5, np.float32)
    onehot[next_move(np.asarray(obs["grid"]), target or args["target"])] = 1.0
    return {"move": onehot}
'''


def _walking_policy() -> Policy:
    """Fit a small policy to follow the hook's move feature (behaviour cloning)."""
    torch.manual_seed(0)
    space = gym.spaces.Dict({"move": gym.spaces.Box(0.0, 1.0, (5,), np.float32)})
    policy = make_policy("ppo", space, gym.spaces.Discrete(6), NetworkConfig(hidden=[16]))
    obs = policy.prepare({"move": np.eye(5, dtype=np.float32)})
    moves = torch.tensor([0, 1, 2, 3, 4])  # stay = 4 (pickup: a no-op away from the key)
    opt = torch.optim.Adam(policy.parameters(), lr=0.05)
    for _ in range(200):
        logp, _, _ = policy.evaluate_actions(obs, moves)
        opt.zero_grad()
        (-logp.mean()).backward()
        opt.step()
    assert [policy.act({"move": row}) for row in np.eye(5, dtype=np.float32)] == [0, 1, 2, 3, 4]
    return policy


@pytest.fixture(scope="module")
def user_library(tmp_path_factory: pytest.TempPathFactory) -> SkillLibrary:
    root = tmp_path_factory.mktemp("workspace") / "skills"
    (root / "hooks").mkdir(parents=True)
    (root / "hooks" / "keydoor_skills.py").write_text(HOOKS)
    lib = SkillLibrary(root)
    policy = _walking_policy()
    common = {"harnesses": ["keydoor"], "step_budget": 40, "provenance": {"env_steps": 0}}
    lib.register_policy(
        policy, name="walk_to", description="Walk onto the key, or next to the door.",
        parameters={"target": {"choices": ["key", "door"], "required": True}},
        effects=["at({target})", "next_to({target})"],
        termination={"predicates": ["at({target})", "next_to({target})"], "mode": "any"},
        features={"fn": "hooks.keydoor_skills:features"}, **common)
    lib.register_policy(
        policy, name="walk_to_goal", description="Walk onto the goal; the door must be open.",
        preconditions=["open(door)"], effects=["at(goal)"], termination={"predicates": ["at(goal)"]},
        features={"fn": "hooks.keydoor_skills:features", "kwargs": {"target": "goal"}}, **common)
    lib.register(Skill(name="take", kind="primitive", action="pickup", harnesses=["keydoor"],
                       description="Pick up the key the agent stands on.",
                       preconditions=["at(key)"], effects=["carrying(key)"], step_budget=1))
    lib.register(Skill(name="open_door", kind="primitive", action="open", harnesses=["keydoor"],
                       description="Open the door next to the agent with the key.",
                       preconditions=["carrying(key)", "next_to(door)"], effects=["open(door)"], step_budget=1))
    return lib


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_planner_chains_the_users_skills_on_the_users_game(user_library: SkillLibrary, seed: int) -> None:
    with make_harness(str(KEYDOOR)) as h:
        rec = Agent(SymbolicPlanner(), user_library).run("get to the goal", h, seed=seed)
    assert rec.success and rec.extra["success_source"] == "harness", rec.failure_detail
    calls = [o.skill.split("@")[0] for d in rec.decisions for o in d.outcomes]
    assert calls == ["walk_to", "take", "walk_to", "open_door", "walk_to_goal"]
    args = [o.args.get("target") for d in rec.decisions for o in d.outcomes]
    assert args[0] == "key" and args[2] == "door"  # bound from the atoms at(key), next_to(door)


