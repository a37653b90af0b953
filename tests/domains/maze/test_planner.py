"""The maze planner: waypoints along a shortest path, replanning, and a full run on
PointMaze_Large with a scripted (PD) reach standing in for the trained skill."""

import numpy as np
import pytest

from polar.domains.maze.planner import MazePlanner, waypoint
from polar.domains.maze.reach import hook_done, scripted_action, target_of
from polar.errors import ConfigError, PlannerError
from polar.harnesses import make_harness
from polar.planners.base import HistoryItem, PlannerContext, SkillInfo
from polar.planners.decisions import Finish, SkillCall, describe_decision
from polar.planners.profile import load_planner


def _ctx(h, task="go to the goal", history=(), skills=()):
    return PlannerContext(task=task, spec=h.spec, observation="", symbolic=h.symbolic_state(),
                          history=list(history), skills=list(skills))


def _fail(decision, reason="step budget (100) exhausted"):
    return HistoryItem(decision=describe_decision(decision), success=False, steps=100, reward=0.0, reason=reason)


@pytest.fixture
def medium():
    h = make_harness("maze:PointMaze_Medium-v3", position_noise=0.0)
    h.reset(seed=0, options={"reset_cell": [1, 1], "goal_cell": [6, 6]})
    yield h
    h.close()


def test_waypoint_goes_straight_up_to_lookahead():
    path = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 4)]
    assert waypoint(path, 1) == (1, 2)
    assert waypoint(path, 2) == (1, 3)
    assert waypoint(path, 5) == (1, 4)  # stops where the path turns
    assert waypoint([(1, 1), (2, 1), (2, 2)], 3) == (2, 1)
    assert waypoint([(3, 3)], 2) == (3, 3)


def test_first_call_is_the_next_straight_waypoint(medium):
    path = medium.maze.shortest_path((1, 1), (6, 6))
    assert path[:3] == [(1, 1), (1, 2), (2, 2)]  # the path turns at once
    d = MazePlanner().decide(_ctx(medium))
    assert d == SkillCall(skill="reach", args={"row": 1, "col": 2}, reason=d.reason)
    assert f"{len(path) - 1}-move path" in d.reason


def test_two_cells_ahead_on_a_straight_run(medium):
    medium.place_ball(*medium.maze.cell_to_xy((1, 2)))  # next: (2,2), (3,2), (4,2) straight south
    d = MazePlanner(lookahead=2).decide(_ctx(medium))
    assert d.args == {"row": 3, "col": 2}
    # after a failed reach the planner replans one cell ahead
    d1 = MazePlanner(lookahead=2).decide(_ctx(medium, history=[_fail(d)]))
    assert d1.args == {"row": 2, "col": 2}


def test_goal_cell_in_line_calls_reach_on_the_goal_point(medium):
    medium.place_ball(*medium.maze.cell_to_xy((5, 6)))
    d = MazePlanner().decide(_ctx(medium))
    assert d == SkillCall(skill="reach", args={}, reason=d.reason)


def test_finishes_when_the_goal_holds_and_gives_up_on_repeats(medium):
    medium.place_ball(*medium.maze.cell_to_xy((6, 6)))
    assert MazePlanner().decide(_ctx(medium)) == Finish(success=True, reason="at(goal) holds")
    medium.place_ball(*medium.maze.cell_to_xy((1, 1)))
    call = SkillCall(skill="reach", args={"row": 1, "col": 2})
    d = MazePlanner(max_repeats=2).decide(_ctx(medium, history=[_fail(call), _fail(call)]))
    assert isinstance(d, Finish) and not d.success and "failed 2 times in a row" in d.reason


def test_cell_task(medium):
    d = MazePlanner().decide(_ctx(medium, task="Go to cell (2, 1)"))
    assert d.args == {"row": 2, "col": 1}
    medium.place_ball(*medium.maze.cell_to_xy((2, 1)))
    assert MazePlanner().decide(_ctx(medium, task="go to cell 2,1")).success


def test_clear_errors(medium):
    with pytest.raises(PlannerError, match="understands 'go to the goal'"):
        MazePlanner().decide(_ctx(medium, task="pick up the key"))
    other = SkillInfo(name="goto", description="x")
    with pytest.raises(PlannerError, match="needs skill 'reach'"):
        MazePlanner().decide(_ctx(medium, skills=[other]))
    grid = make_harness("minigrid:MiniGrid-Empty-5x5-v0")
    grid.reset(seed=0)
    with pytest.raises(PlannerError, match="publishes no maze"):
        MazePlanner().decide(_ctx(grid))


def test_profile_selects_the_maze_planner(tmp_path):
    assert isinstance(load_planner("maze"), MazePlanner)
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: maze\noptions: {lookahed: 2}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: options.lookahed: unknown option"):
        load_planner(str(bad))


def run_with_scripted_reach(h, obs, planner, task="go to the goal", budget=100):
    """The agent loop in miniature: decide, run the scripted reach until its termination,
    its budget or the episode's end, feed the outcome back. Returns (success, steps, calls)."""
    history, steps = [], 0
    while True:
        d = planner.decide(PlannerContext(task=task, spec=h.spec, observation=h.render_text(obs),
                                          symbolic=h.symbolic_state(), history=history, step=steps))
        if isinstance(d, Finish):
            return d.success, steps, len(history)
        cell = (d.args["row"], d.args["col"]) if d.args else None
        ok, n, ended = False, 0, False
        while n < budget and not ok and not ended:
            obs, _, term, trunc, _ = h.step(scripted_action(obs, target_of(h.maze, obs, cell)))
            n += 1
            ok, ended = hook_done(h.symbolic_state(), d.args), term or trunc
        steps += n
        history.append(HistoryItem(decision=describe_decision(d), success=ok, steps=n, reward=0.0,
                                   reason="termination holds" if ok else "budget or episode end"))
        if ended:
            return bool(term), steps, len(history)


def test_planner_with_scripted_reach_solves_large():
    h = make_harness("maze:PointMaze_Large-v3")
    results = [run_with_scripted_reach(h, h.reset(seed=seed)[0], MazePlanner()) for seed in range(4)]
    assert all(ok for ok, _, _ in results), results
    assert all(steps < h.spec.max_steps for _, steps, _ in results)


def test_scripted_reach_alone_fails_through_walls():
    # the same controller aimed straight at the goal, without the planner's waypoints
    h = make_harness("maze:PointMaze_Large-v3")
    obs, _ = h.reset(seed=2)
    state = h.symbolic_state()
    assert h.maze.distances(tuple(state.agent["cell"]))[state.objects[0].pos] > 3
    for _ in range(h.spec.max_steps):
        obs, _, term, trunc, _ = h.step(scripted_action(obs, tuple(np.asarray(obs["desired_goal"]))))
        if term or trunc:
            break
    assert trunc and not term


@pytest.mark.parametrize(("task", "planner"), [
    ("go to the goal", "maze"),
    ("go to cell (3, 4)", "maze"),
    ("pick up the yellow key", "llm"),  # the symbolic planner's task, but no key in a maze
])
def test_a_maze_harness_defaults_to_the_maze_planner(medium, task, planner):
    from polar.planners.choose import default_planner, language_model

    chosen, why = default_planner(task, medium.spec)
    assert chosen == (language_model("x")[0] if planner == "llm" else planner), why
    assert default_planner("go to the goal")[0] == "symbolic"  # no harness given: not a maze


def test_polar_task_on_a_maze_without_planner_reaches_the_goal_with_the_shipped_reach(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    r = subprocess.run([sys.executable, "-m", "polar", "task", "go to the goal", "--harness",
                        "maze:PointMaze_Large-v3", "--seed", "3", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "POLAR_SKILLS": str(repo / "skills")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "planner: maze" in r.stdout
    rec = json.loads((tmp_path / "run" / "episode.json").read_text())
    assert rec["success"] and rec["agent"].startswith("planner:maze")
    assert {d["decision"]["skill"] for d in rec["decisions"] if d["decision"].get("kind") == "skill"} == {"reach"}
