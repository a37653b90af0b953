"""A row whose success and return disagree (successes with no return on a harness whose
reward marks success) is flagged in the terminal table, report.md, report.html and the
README's brief table; a row where they agree is not. Real suite run through `compare`, a
real connector game and a real MiniGrid harness."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from polar.evals.comparison import compare
from polar.evals.report import DISAGREE_MARK, brief_markdown

# The GoToDoor trap in miniature: the goal predicate holds once the lamp is switched on (and
# the game ends), but the game pays nothing for it and reports no success, while declaring
# that its reward marks success. Judged by its goal, every switch is a success with return 0.
GAME = textwrap.dedent('''
    import numpy as np
    from gymnasium import spaces
    from polar.harnesses.connector import serve

    class Lamp:
        reward_marks_success = True
        action_meanings = ["wait", "switch"]
        max_steps = 10

        def __init__(self):
            self.observation_space = spaces.Discrete(2)
            self.action_space = spaces.Discrete(2)
            self.on = False

        def reset(self, seed=None, options=None):
            self.on = False
            return 0, {}

        def step(self, action):
            self.on = int(action) == 1
            return int(self.on), 0.0, self.on, False, {}

        def symbolic(self):
            return {"predicates": ["on(lamp)"] if self.on else [], "goal": ["on(lamp)"]}

    if __name__ == "__main__":
        serve(Lamp)
''')


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("flag")
    (root / "lamp.py").write_text(GAME)
    (root / "lamp.yaml").write_text("id: lamp\nconnector:\n  command: [python, lamp.py]\n")
    suite = {
        "name": "flag-test",
        "agents": [{"name": "random", "kind": "random"}],
        "harnesses": [{"id": str(root / "lamp.yaml"), "name": "lamp"},
                      {"id": "minigrid:MiniGrid-Empty-5x5-v0", "name": "Empty-5x5"}],
        "seeds": 1,
        "episodes": 12,
    }
    text = io.StringIO()
    compare(suite, root / "out", progress=False, console=Console(file=text, width=400))
    return root / "out", text.getvalue()


def test_the_disagreeing_row_is_flagged_everywhere(compared: tuple[Path, str]) -> None:
    out, terminal = compared
    stored = json.loads((out / "results.json").read_text())
    rows = {r["harness"]: r for r in stored["rows"]}
    lamp, grid = rows["lamp"], rows["Empty-5x5"]
    assert lamp["success"]["value"] > 0 and lamp["mean_return"]["value"] == 0.0
    assert lamp["unrewarded_successes"] == round(lamp["success"]["value"] * 12) > 0
    line = f"Success and return disagree: random on lamp: {lamp['unrewarded_successes']} of 12 episodes"
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    for text in (terminal, md, page, brief_markdown(stored)):
        assert line in text and text.count("Success and return disagree") == 1
    lamp_line = next(x for x in md.splitlines() if x.startswith("| random | none | lamp |"))
    assert DISAGREE_MARK in lamp_line and DISAGREE_MARK in page
    # MiniGrid's reward marks success too, and its successes came with their reward: no flag
    assert grid["success"]["value"] > 0 and grid["unrewarded_successes"] == 0
    grid_line = next(x for x in md.splitlines() if x.startswith("| random | none | Empty-5x5 |"))
    assert DISAGREE_MARK not in grid_line
