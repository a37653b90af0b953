"""Corridor: the example game of a Polar workspace, run in its own process by the connector.

A corridor of `size` cells holds the agent and a button. Pressing the button while standing on
it lights the lamp: reward 1, the episode ends, and that is success. With `goal: button` the
episode ends (reward 1) as soon as the agent stands on the button instead: the training task
of a "walk to the button" skill (see ../corridor_walk.yaml and the walkthrough).

Observation: [agent position, button position]. Actions: 0 left, 1 right, 2 press.
Replace the rules with your game's; keep `serve(...)` at the bottom (docs/connector.md).
"""

import numpy as np
from gymnasium import spaces

from polar.harnesses.connector import serve


class Corridor:
    action_meanings = ["left", "right", "press"]
    reward_range = (0.0, 1.0)
    reports_success = True
    predicate_vocabulary = ("at(button)", "lit(lamp)")

    def __init__(self, size: int = 7, max_steps: int = 40, goal: str = "lamp") -> None:
        if goal not in ("lamp", "button"):
            raise ValueError(f"goal: expected lamp or button, got {goal!r}")
        self.size, self.max_steps, self.goal = size, max_steps, goal
        self.description = (f"A corridor of {size} cells. Observation: [your position, the button's position]. "
                            "Actions: 0 left, 1 right, 2 press (lights the lamp when you stand on the button). "
                            + ("Reward 1 for lighting the lamp." if goal == "lamp" else
                               "Reward 1 for reaching the button."))
        self.observation_space = spaces.Box(0, size - 1, (2,), np.int64)
        self.action_space = spaces.Discrete(3)
        self.rng = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agent, self.button = (int(x) for x in self.rng.choice(self.size, 2, replace=False))
        self.lit, self.t = False, 0
        return self._obs(), {"success": False}

    def step(self, action):
        action, self.t = int(action), self.t + 1
        if action == 0:
            self.agent = max(0, self.agent - 1)
        elif action == 1:
            self.agent = min(self.size - 1, self.agent + 1)
        elif action == 2 and self.agent == self.button:
            self.lit = True
        done = self.lit if self.goal == "lamp" else self.agent == self.button
        return self._obs(), float(done), done, not done and self.t >= self.max_steps, {"success": done}

    def _obs(self):
        return np.array([self.agent, self.button], np.int64)

    def render_text(self, obs):
        cells = ["."] * self.size
        cells[int(obs[1])] = "B"
        cells[int(obs[0])] = "A" if obs[0] != obs[1] else "@"
        return "".join(cells) + "  (A you, B button, @ you on the button)" + ("; the lamp is lit" if self.lit else "")

    def symbolic(self):
        facts = {"at(button)": self.agent == self.button, "lit(lamp)": self.lit}
        goal = "lit(lamp)" if self.goal == "lamp" else "at(button)"
        return {"predicates": [p for p, v in facts.items() if v], "goal": [goal],
                "mission": "turn on the lamp" if self.goal == "lamp" else "walk to the button",
                "agent": {"pos": [self.agent, 0]}, "objects": [{"type": "button", "pos": [self.button, 0]}]}


if __name__ == "__main__":
    serve(Corridor)
