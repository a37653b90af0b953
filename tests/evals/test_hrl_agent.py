"""The HRL agent: PPO over skill options (the shipped skills) learns DoorKey-5x5, where the
right order of skill calls is needed, and is charged every primitive env step."""

from __future__ import annotations

from pathlib import Path

from polar.evals.cells import CellResult
from polar.evals.runner import cell_path, run_suite
from polar.evals.suite import load_suite

DECISIONS = 3072  # the budget this test states: controller decisions (option calls) of training
HRL = {"name": "hrl", "kind": "hrl", "train_steps": DECISIONS, "recipe": "hrl_options", "option_steps": 40,
       "max_options": 16}
SUITE = {"name": "hrl", "agents": [HRL], "seeds": [0], "episodes": 20,
         "harnesses": [{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}]}
ORDER = ["goto(color=yellow, object=key)", "pickup()", "goto(color=yellow, object=door)", "toggle()",
         "goto(object=goal)"]


def test_hrl_controller_learns_doorkey_and_is_charged_its_primitive_steps(tmp_path: Path) -> None:
    res = run_suite(SUITE, tmp_path, progress=False)
    [row] = res.rows
    assert row.success.value >= 0.9, row.seed_success
    assert (row.observes, row.decides_from) == ("full", "view")  # goto reads the grid; the controller the view

    [cell] = load_suite(SUITE).cells()
    result = CellResult.model_validate_json(cell_path(tmp_path, cell).read_text())
    info = result.prep.info
    assert sorted(info["options"]) == sorted([*ORDER, "drop()"])
    primitive = info["primitive_env_steps"]
    assert info["controller_decisions"] == DECISIONS and primitive > DECISIONS  # an option takes several steps
    assert row.ledger.task_train_env_steps == primitive
    assert row.ledger.pretrain_env_steps > 0 and {s["skill"].split("@")[0] for s in info["skills"]} == {
        "goto", "pickup", "drop", "toggle"}
    [curve] = res.curves
    assert curve.env_steps == [primitive]  # the curve's x axis is primitive env steps too

    solved = [e for e in result.episodes if e.success]
    calls = [[d.decision["option"] for d in e.decisions] for e in solved]
    assert all(c[-1] == "goto(object=goal)" for c in calls)
    for c in calls:  # the door opens only with the key held: a toggle after a pickup
        assert max(i for i, o in enumerate(c) if o == "toggle()") > c.index("pickup()")
    assert all(d.outcomes and d.outcomes[0].skill for e in solved for d in e.decisions)
    assert sum(e.env_steps for e in result.episodes) == row.eval_env_steps


def test_hrl_over_the_memory_learns_doorkey_from_its_own_view(tmp_path: Path) -> None:
    """`memory: true` (docs/memory.md): the memory skills' options from the library's declarations,
    masked where they do not apply over the memory, the controller on its view: view/view."""
    agent = {**HRL, "name": "hrl-memory", "memory": True, "skills": "skills_memory"}
    suite = {"name": "hrl-memory", "agents": [agent], "seeds": [0], "episodes": 20,
             "harnesses": [{"id": "minigrid:MiniGrid-DoorKey-5x5-v0", "kwargs": {"odometry": True}}]}
    res = run_suite(suite, tmp_path, progress=False)
    [row] = res.rows
    assert row.success.value >= 0.9, row.seed_success
    assert (row.observes, row.decides_from) == ("view", "view")
    [cell] = load_suite(suite).cells()
    result = CellResult.model_validate_json(cell_path(tmp_path, cell).read_text())
    info = result.prep.info
    assert len(info["options"]) == 49 and "explore(object=key)" in info["options"]
    assert {s["skill"].split("@")[0] for s in info["skills"]} == {
        "explore", "goto", "pickup", "drop", "toggle", "unlock", "forward", "left", "right"}
    assert row.ledger.task_train_env_steps == info["primitive_env_steps"] > 0
    calls = [d for e in result.episodes for d in e.decisions]
    # the mask: the controller never calls an option that does not apply over the memory
    assert calls and not [d for d in calls if d.outcomes[0].reason and "not applicable" in d.outcomes[0].reason]
