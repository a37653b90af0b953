"""Which planner `polar task` runs without --planner, and why, on real harnesses: the
symbolic planner for tasks it reads whole or that restate the harness's goal, Polar's trained
planner for free-form tasks, the base model only where the trained one cannot run."""

import shutil
from pathlib import Path

import pytest

from polar.harnesses.registry import make_harness
from polar.llm.models import shipped_entry
from polar.planners.choose import (
    LOCAL_LLM,
    SYMBOLIC,
    TRAINED,
    default_planner,
    trained_planner_problem,
)
from polar.planners.symbolic import task_warning

REPO = Path(__file__).resolve().parents[2]
CORRIDOR = REPO / "polar" / "scaffold" / "workspace" / "harnesses" / "corridor" / "corridor.yaml"
FREE_FORM = "grab the key, unlock the door, then head for the green square"


def _started(harness_id: str, seed: int = 0):
    h = make_harness(harness_id)
    h.reset(seed=seed)
    return h, h.symbolic_state()


@pytest.fixture
def merged_cache(tmp_path, monkeypatch):
    """A cache holding the trained planner's merged GGUF: it can run whatever is installed."""
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "cache"))
    gguf = Path(shipped_entry(TRAINED).path)
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF")
    return gguf


def test_a_free_form_minigrid_task_goes_to_the_trained_planner(merged_cache):
    h, state = _started("minigrid:MiniGrid-DoorKey-8x8-v0")
    with h:
        chosen, why = default_planner(FREE_FORM, h.spec, state)
    assert chosen == TRAINED, why
    assert "cannot parse 'grab the key', 'head for the green square'" in why
    assert "Polar's trained planner plans" in why


def test_without_the_merged_model_the_trained_planner_runs_when_it_can_be_merged(tmp_path, monkeypatch):
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("POLAR_LLAMA_CPP_SDIST", raising=False)
    problem = trained_planner_problem()
    assert problem is not None  # nothing merged, no converter in an empty cache
    chosen, why = default_planner(FREE_FORM)
    assert chosen == LOCAL_LLM and problem in why and "the base language model plans" in why


def test_a_task_restating_the_mission_goes_to_the_symbolic_planner(merged_cache):
    h, state = _started("minigrid:MiniGrid-GoToDoor-8x8-v0", seed=3)
    with h:
        mission = state.mission
        assert mission and state.goal
        chosen, why = default_planner(mission.upper() + "!", h.spec, state)  # case and punctuation aside
        assert (chosen, why.split(":")[0]) == (SYMBOLIC, "the task is the harness's mission")
        chosen, why = default_planner("go to the door the mission names", h.spec, state)
        assert chosen == SYMBOLIC and "refers to the harness's mission" in why and state.goal[0] in why
        # without a harness the same words are free-form: 'the mission names' is not read
        assert default_planner("go to the door the mission names", None, None)[0] == TRAINED


def test_a_user_game_whose_state_carries_a_goal_gets_the_symbolic_planner(merged_cache):
    h, state = _started(str(CORRIDOR))
    with h:
        assert state.goal == ["lit(lamp)"]
        chosen, why = default_planner("turn on the lamp", h.spec, state)
        assert chosen == SYMBOLIC, why
        assert why == "the task is the harness's mission: the symbolic planner plans for its goal lit(lamp)"
        # another task on the same game is the language model's
        assert default_planner("press the button twice", h.spec, state)[0] == TRAINED


def test_a_missing_adapter_falls_back_to_the_base_model_and_says_why(merged_cache, tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    shipped = REPO / "planners" / "models" / TRAINED
    copy = workspace / "planners" / "models" / TRAINED
    shutil.copytree(shipped, copy)
    (copy / "adapter-2" / "adapter_model.safetensors").unlink()
    monkeypatch.chdir(workspace)  # the workspace's copy of the model wins over the shipped one
    chosen, why = default_planner(FREE_FORM)
    assert chosen == LOCAL_LLM
    assert "Polar's trained planner cannot run here" in why
    assert "adapter-2/adapter_model.safetensors: missing (model.json lists adapter 'adapter-2')" in why


def test_a_forced_symbolic_planner_warns_of_the_words_it_drops():
    h, state = _started("minigrid:MiniGrid-GoToDoor-8x8-v0", seed=3)
    with h:
        warning = task_warning("go to the door the mission names", state, h.spec)
        assert "does not read 'mission' 'names'" in warning
        assert f"plans for the harness's goal {state.goal[0]}" in warning
        assert "plans for facing(door,any) from the rest" in task_warning("go to the door over there", state, h.spec)
        assert task_warning(state.mission, state, h.spec) is None  # the mission itself: nothing dropped
        assert task_warning("go to the blue door", state, h.spec) is None


def test_a_task_referring_to_the_mission_reaches_the_missions_door():
    """'go to the door the mission names' once became any door (the blue one on this seed);
    the symbolic planner now plans for the door the mission names, and the judge agrees."""
    from polar.agent import run_episode
    from polar.planners.symbolic import SymbolicPlanner
    from polar.skills.store import SkillLibrary

    h, state = _started("minigrid:MiniGrid-GoToDoor-8x8-v0", seed=3)
    with h:
        rec = run_episode("go to the door the mission names", h, SymbolicPlanner(), SkillLibrary(), seed=3)
    assert rec.success, rec.failure_detail
    goto = rec.decisions[0].outcomes[0]
    assert goto.args.get("color") == state.mission.split()[-2] == "red"  # "go to the red door"
