"""KeyDoor behind the Polar connector: spaces, a step limit and seeding around the game's API."""

import numpy as np
from gymnasium import spaces
from keydoor_game import ACTION_NAMES, KeyDoorGame

from polar.harnesses.connector import serve


class KeyDoor:
    action_meanings = ACTION_NAMES
    reward_range = (0.0, 1.0)
    reports_success = True
    predicate_vocabulary = ("carrying(key)", "open(door)", "at(goal)", "at(key)", "next_to(door)")

    def __init__(self, size: int = 7, max_steps: int = 100) -> None:
        self.size, self.max_steps = size, max_steps
        self.observation_space = spaces.Dict({"grid": spaces.Box(0, 6, (size, size), np.int8),
                                              "inventory": spaces.MultiBinary(1)})
        self.action_space = spaces.Discrete(len(ACTION_NAMES))
        self.rng = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.game, self.t = KeyDoorGame(self.size, seed=int(self.rng.integers(2**31))), 0
        return self._obs(), {"success": False}

    def step(self, action):
        over, reward = self.game.step(int(action))
        self.t += 1
        return self._obs(), reward, over, not over and self.t >= self.max_steps, {"success": over}

    def _obs(self):
        o = self.game.get_observation()
        return {"grid": o["grid"], "inventory": np.array([o["inventory"].count("key") > 0], np.int8)}

    def render_text(self, obs):
        rows = ["".join(".#KDOGA"[c] for c in row) for row in obs["grid"]]
        legend = "(# wall, K key, D locked door, O open door, G goal, A you, . floor)"
        return "\n".join(rows) + f"\n{legend}\ncarrying key: {'yes' if obs['inventory'][0] else 'no'}"

    def symbolic(self):
        g = self.game
        facts = {"carrying(key)": "key" in g.inventory, "open(door)": g.door_open,
                 "at(goal)": g.agent == g.goal, "at(key)": g.agent == g.key,
                 "next_to(door)": g.next_to_door()}
        objects = [{"type": "door", "pos": g.door, "state": "open" if g.door_open else "locked"},
                   {"type": "goal", "pos": g.goal}] + ([{"type": "key", "pos": g.key}] if g.key else [])
        return {"predicates": [p for p, v in facts.items() if v], "goal": ["at(goal)"],
                "objects": objects, "agent": {"pos": list(g.agent), "carrying": "key" in g.inventory}}


if __name__ == "__main__":
    serve(KeyDoor)
