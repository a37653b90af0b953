"""What the planner is shown of a skill: built by the agent layer from the manifest."""

from polar.agent.context import skill_info
from polar.skills.model import Measurement
from polar.skills.store import SkillLibrary
from tests.skills.conftest import manifest, tiny_policy


def test_skill_info_shows_the_measured_success_on_this_harness(tmp_path) -> None:
    library = SkillLibrary(tmp_path / "skills")
    skill = library.register_policy(tiny_policy(), **manifest())
    library.record_evaluation(skill, Measurement.from_counts(9, 10, harness="minigrid:A"))
    library.record_evaluation(skill, Measurement.from_counts(1, 4, harness="minigrid:B"))
    info = skill_info(library.get("reach"), "minigrid:A")
    assert info.success_rate == 0.9 and info.success_ci[0] < 0.9 < info.success_ci[1]
    assert info.parameters == {"color": ["red", "green"]} and info.kind == "policy"
    assert skill_info(library.get("reach"), "minigrid:B").success_rate == 0.25
    assert info.success_n == 10  # what the rate rests on


def test_the_prompt_shows_how_many_episodes_a_success_rate_rests_on(tmp_path) -> None:
    from polar.harnesses.registry import make_harness
    from polar.planners.base import PlannerContext
    from polar.planners.llm import template_variables
    from polar.prompts.templates import load_template

    library = SkillLibrary(tmp_path / "skills")
    skill = library.register_policy(tiny_policy(), **manifest())
    library.record_evaluation(skill, Measurement.from_counts(9, 10, harness="minigrid:A"))
    with make_harness("gym:CartPole-v1") as h:
        obs, _ = h.reset(seed=0)
        ctx = PlannerContext(task="t", spec=h.spec, observation=h.render_text(obs),
                             skills=[skill_info(library.get("reach"), "minigrid:A")])
    text = load_template("planner_skill").render(template_variables(ctx, "skill"))
    assert "[success 90% of 10 episodes]" in text
    assert "low=[-4.8, -inf, -0.4189, -inf]" in text and "'" not in text.split("Observation space")[1].split("\n")[0]


def test_observation_json_is_what_policy_code_receives() -> None:
    import json

    import numpy as np

    from polar.agent.context import observation_json

    obs = {"image": np.arange(6, dtype=np.uint8).reshape(2, 3), "direction": np.int64(2), "mission": "go",
           "pos": np.array([0.1 + 0.2, -1e-9], dtype=np.float32)}
    data = json.loads(observation_json(obs))
    assert data["image"] == [[0, 1, 2], [3, 4, 5]] and data["direction"] == 2 and data["mission"] == "go"
    assert data["pos"] == [0.3, -1e-9]  # float32 noise rounded to 6 significant digits
    long = observation_json(np.zeros(1000), limit=50)
    assert long.startswith("[0.0,0.0") and long.endswith("... (4001 characters in all)")
    assert observation_json({"env": object()}) == "(not JSON data: SandboxError)"  # a live object is refused


def test_live_context_is_the_first_decision_of_a_real_episode(tmp_path) -> None:
    from polar.agent.context import live_context
    from polar.harnesses.registry import make_harness
    from polar.skills.search_path import open_library

    with make_harness("minigrid:MiniGrid-DoorKey-5x5-v0") as h:
        ctx = live_context(h, 3, open_library())
        again = live_context(h, 3, open_library())
    assert ctx.task == "use the key to open the door and then get to the goal" and ctx.step == 0
    assert ctx.observation == again.observation and ctx.symbolic is not None  # the seed fixes the start
    assert {"goto", "pickup", "toggle"} <= {s.name for s in ctx.skills}
    assert '"mission":"use the key' in (ctx.observation_json or "") and ctx.previous_code is None
